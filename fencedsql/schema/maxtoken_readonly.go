package schema

import (
	"context"
	"database/sql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// MaxTokenReadOnly is MaxToken for a new MySQL/MariaDB primary that is still read-only,
// as RaiseTokenFloorReadOnly is RaiseTokenFloor (MHA's master_ip_failover_script
// --command=start runs before MHA turns read_only off): instead of a writable server
// it requires one with no replication configured and no replication thread running,
// so a replica — whose copy may lag tokens the primary accepted — is still refused with
// ErrNotPrimary. The failover hook reads it (deploy/failover/raise-floor.sh,
// fencedsql-schema -max-token -allow-read-only) to raise the lock service above every
// token the promoted database holds (red-team rt59c F2). A dialect without a
// dialect.ReplicationThreadCounter (PostgreSQL, SQLite) is a *ConfigError.
func MaxTokenReadOnly(ctx context.Context, db *sql.DB, d dialect.Dialect, tables ...GuardSpec) (uint64, error) {
	return maxTokenOf(ctx, db, d, tables, true)
}
