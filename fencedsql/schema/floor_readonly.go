package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// RaiseTokenFloorReadOnly is RaiseTokenFloor for a new primary that is still read-only
// (red-team rt41b F4): MHA runs master_ip_failover_script --command=start, where the
// floor must be raised before the virtual IP moves, before it turns read_only off on
// the new master. Instead of requiring a writable server (dialect.PrimaryChecker) it
// requires one with no replication configured (dialect.ReplicationLister: MySQL's
// SHOW REPLICA STATUS, MariaDB's SHOW ALL SLAVES STATUS empty) and no replication
// thread running: a replica, even one whose threads are stopped, would have the raise
// undone by its primary's floor row when replication starts again (red-team rt24c F1),
// so it is refused with ErrNotPrimary and nothing is written. The account must be
// able to write while read_only is on (MariaDB: READ_ONLY ADMIN or SUPER; MySQL:
// CONNECTION_ADMIN or SUPER) and to list the replication connections (MariaDB: REPLICA
// MONITOR, REPLICATION CLIENT or SUPER; MySQL: REPLICATION CLIENT); an error reading
// them fails closed. A dialect without dialect.ReplicationLister (PostgreSQL, SQLite)
// is a *ConfigError: a PostgreSQL standby cannot take the raise at all.
func RaiseTokenFloorReadOnly(ctx context.Context, db *sql.DB, d dialect.Dialect, floor uint64) error {
	return raiseTokenFloor(ctx, db, d, floor, true)
}

// checkUnreplicated fails with ErrNotPrimary unless the server has no replication
// configured and runs no replication thread (RaiseTokenFloorReadOnly).
func checkUnreplicated(ctx context.Context, db *sql.DB, d dialect.Dialect) error {
	l, ok := d.(dialect.ReplicationLister)
	if !ok {
		return configErr("RaiseTokenFloorReadOnly: %s has no read-only primary to raise on: use RaiseTokenFloor", d.Name())
	}
	var lastErr error
	for _, q := range l.ReplicationStatusQueries() {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			lastErr = err // this server's spelling may be another one
			continue
		}
		configured := rows.Next()
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("fencedsql: RaiseTokenFloorReadOnly: listing the server's replication connections: %w", err)
		}
		if configured {
			return fmt.Errorf("fencedsql: RaiseTokenFloorReadOnly: the server has replication configured (a replica, even with its threads stopped, has the raise undone when replication starts again); reset it (RESET SLAVE ALL) or raise on the primary: %w", ErrNotPrimary)
		}
		var threads int
		if err := db.QueryRowContext(ctx, l.ReplicationThreadsQuery()).Scan(&threads); err != nil {
			return fmt.Errorf("fencedsql: RaiseTokenFloorReadOnly: looking for replication threads: %w", err)
		}
		if threads > 0 {
			return fmt.Errorf("fencedsql: RaiseTokenFloorReadOnly: the server runs replication threads: %w", ErrNotPrimary)
		}
		return nil
	}
	return fmt.Errorf("fencedsql: RaiseTokenFloorReadOnly: listing the server's replication connections (the account needs REPLICATION CLIENT, REPLICA MONITOR or SUPER): %w", lastErr)
}
