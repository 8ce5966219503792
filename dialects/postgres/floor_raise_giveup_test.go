package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseGivingUpLeavesNoWaiterBehind: the PostgreSQL side of red-team rt58d F1
// (mysql: TestRaiseGivingUpLeavesNoWaiterBehind). A raise waiting for the floor row,
// locked by another session, gives up at its context's deadline; afterwards no
// session of it still waits on a lock (pgx cancels the statement on the server when
// the context ends).
func TestRaiseGivingUpLeavesNoWaiterBehind(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	holder, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.ExecContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	err = schema.RaiseTokenFloor(rctx, raw, postgres.Dialect, 10)
	cancel()
	if err == nil {
		t.Fatal("RaiseTokenFloor returned nil while the floor row was locked")
	}
	time.Sleep(300 * time.Millisecond)
	var waiting int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()").Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if waiting != 0 {
		t.Errorf("after RaiseTokenFloor returned (%v), %d session(s) of it still wait on a lock", err, waiting)
	}
}
