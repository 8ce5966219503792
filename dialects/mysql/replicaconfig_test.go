package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestReplicationConfigured checks the second half of the server-role judgement
// (red-team rt48i) on the test server, which has no replication configured: the
// harness's account lists none; an account without SLAVE MONITOR (or SUPER) cannot
// list them (listed false, no error), and the floor tools then fail closed with
// ErrServerRoleUnknown, unless the caller allows it (the pool's regression check).
// The replica cases run on real pairs (internal/failover: TestMariaDBStoppedReplicaIsNotPrimary,
// TestMariaDBFloorToolsOnStoppedReplicaRefused).
func TestReplicationConfigured(t *testing.T) {
	ctx := context.Background()
	raw, dsn := maxTokenAccounts(t, ctx)
	query := func(db *sql.DB) dialect.CatalogQuery {
		return func(ctx context.Context, q string, args ...any) ([][]string, error) {
			rows, err := db.QueryContext(ctx, q, args...)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			var n [][]string
			for rows.Next() {
				n = append(n, nil)
			}
			return n, rows.Err()
		}
	}
	if configured, listed, err := mysql.Dialect.(dialect.ReplicationLister).ReplicationConfigured(ctx, query(raw)); err != nil || !listed || configured {
		t.Fatalf("ReplicationConfigured on the test server: configured %v, listed %v, %v; want none listed", configured, listed, err)
	}
	blind := testdb.Open(t, "mysql", limitedAccount(t, raw, dsn, "rc_bl_", "SELECT ON DB.*"))
	if configured, listed, err := mysql.Dialect.(dialect.ReplicationLister).ReplicationConfigured(ctx, query(blind)); err != nil || listed || configured {
		t.Errorf("ReplicationConfigured by an account without SLAVE MONITOR: configured %v, listed %v, %v; want not listed, no error", configured, listed, err)
	}
	if m, err := schema.MaxToken(ctx, blind, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); !errors.Is(err, schema.ErrServerRoleUnknown) {
		t.Errorf("MaxToken by an account without SLAVE MONITOR: %d, %v; want ErrServerRoleUnknown", m, err)
	}
	if _, err := schema.MaxToken(schema.WithServerRoleUnknownAllowed(ctx), blind, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); errors.Is(err, schema.ErrServerRoleUnknown) {
		t.Errorf("MaxToken under WithServerRoleUnknownAllowed: %v; want the role unknown accepted", err)
	}
}
