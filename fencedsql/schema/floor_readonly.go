package schema

import (
	"context"
	"database/sql"

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
// CONNECTION_ADMIN or SUPER) and to list the replication connections (MariaDB 10.5.9+:
// SLAVE MONITOR (REPLICA MONITOR) or SUPER — REPLICATION CLIENT is not enough there;
// MySQL: REPLICATION CLIENT); an account that may not fails with ErrServerRoleUnknown
// and an error reading them fails closed. The judgement is requirePrimary's, the one
// RaiseTokenFloor, MaxToken and the fenced pool's session check make (red-team rt48i),
// with the thread count (dialect.ReplicationThreadCounter) in place of the read_only
// test. A dialect without a ReplicationThreadCounter (PostgreSQL, SQLite) is a
// *ConfigError: a PostgreSQL standby cannot take the raise at all.
func RaiseTokenFloorReadOnly(ctx context.Context, db *sql.DB, d dialect.Dialect, floor uint64) error {
	return raiseTokenFloor(ctx, db, d, floor, true)
}
