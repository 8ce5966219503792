package mysql

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// replicationStatusQueries are the spellings of the statement that lists the server's
// replication connections, tried in order until the server accepts one: MariaDB's
// every named connection (multi-source included), then MySQL 8.0.22+'s (every
// channel) and older MySQL's.
var replicationStatusQueries = [...]string{"SHOW ALL SLAVES STATUS", "SHOW REPLICA STATUS", "SHOW SLAVE STATUS"}

// ReplicationConfigured is the second half of the one server-role judgement
// (dialect.ReplicationLister; the first half is writablePrimary, red-team rt48i F1,
// F2): a server with a replication connection configured — running or stopped (STOP
// SLAVE, STOP ALL SLAVES: no thread left in the process list, Slaves_running 0,
// read_only off by MariaDB's default) — is a replica, not a primary. Any row of the
// listing means configured: a promoted replica must be reset (RESET SLAVE ALL;
// MySQL: RESET REPLICA ALL), and a MariaDB primary that also replicates from another
// server (multi-source) is refused too.
//
// The listing needs a privilege: MariaDB 10.5.9+ SLAVE MONITOR (REPLICA MONITOR) or
// SUPER — not REPLICATION CLIENT, which is BINLOG MONITOR there — and MySQL
// REPLICATION CLIENT (or SUPER). Without it the server answers error 1227, which is
// reported as listed false, err nil: the caller decides (the floor tools fail closed,
// the fenced pool's session check keeps the other half's verdict, docs/design.md). A
// syntax error (1064: a server without that spelling) tries the next spelling; any
// other error is returned.
// ReplicaAdvice implements dialect.ReplicationLister.
func (dialectImpl) ReplicaAdvice() (reset, grant string) {
	return "a promoted replica must be reset (MariaDB: RESET SLAVE ALL; MySQL: RESET REPLICA ALL), and a primary that also replicates from another server (multi-source) is refused",
		"SLAVE MONITOR (MariaDB; or SUPER) or REPLICATION CLIENT (MySQL)"
}

func (dialectImpl) ReplicationConfigured(ctx context.Context, query dialect.CatalogQuery) (configured, listed bool, err error) {
	for _, q := range replicationStatusQueries {
		rows, err := query(ctx, q)
		var me *mysql.MySQLError
		switch {
		case err == nil:
			return len(rows) > 0, true, nil
		case errors.As(err, &me) && me.Number == 1064:
			continue // not this server's spelling
		case errors.As(err, &me) && me.Number == 1227:
			return false, false, nil
		default:
			return false, false, fmt.Errorf("%s: %w", q, err)
		}
	}
	return false, false, fmt.Errorf("the server accepts none of %q", replicationStatusQueries)
}

// ReplicationThreadsQuery counts the replication threads in the process list
// (dialect.ReplicationThreadCounter; writablePrimary's test without read_only, for
// RaiseTokenFloorReadOnly).
func (dialectImpl) ReplicationThreadsQuery() string {
	return "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Slave_SQL', 'Slave_IO', 'Slave_worker')"
}

var (
	_ dialect.ReplicationLister        = dialectImpl{}
	_ dialect.ReplicationThreadCounter = dialectImpl{}
)
