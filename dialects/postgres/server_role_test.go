package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// serverRoleDB returns a fresh database with accounts registered, guarded and holding
// row 1 at token 10, and a plain pool on it.
func serverRoleDB(t *testing.T, ctx context.Context) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		testdb.Exec(t, raw, r.Fix...)
	}
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)")
	return dsn, raw
}

// TestSubscriberIsNotPrimary (red-team rt50c F1–F3): a database with a logical-replication
// subscription — here a disabled one, never connected — is not in recovery, yet its rows
// and floor are fed by another server. The floor tools (RaiseTokenFloor, MaxToken) and a
// fenced pool's first guarded write on a connection refuse it with ErrNotPrimary
// (dialect.ReplicationLister, as MariaDB with replication configured); once the
// subscription is dropped they accept it. The cross-server behaviour (a lagging
// subscriber, a floor lowered by the apply worker) is internal/failover's
// TestLogicalSubscriberIsNotPrimary.
func TestSubscriberIsNotPrimary(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, raw := serverRoleDB(t, ctx)
	if _, err := raw.ExecContext(ctx, "CREATE SUBSCRIPTION fencedsql_test_sub CONNECTION 'host=127.0.0.1 dbname=nowhere' PUBLICATION p "+
		"WITH (connect = false, slot_name = NONE)"); err != nil {
		if strings.Contains(err.Error(), "42501") {
			t.Skipf("the test account may not create a subscription: %v", err)
		}
		t.Fatal(err)
	}
	dropped := false
	drop := func() {
		if !dropped {
			dropped = true
			testdb.Exec(t, raw, "DROP SUBSCRIPTION fencedsql_test_sub") // before the database's drop
		}
	}
	t.Cleanup(drop)
	write := func(tok uint64) error {
		pool, err := sql.Open(postgres.DriverName, fencetest.WithParam(dsn, fencedsql.ParamTables+"=accounts"))
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		_, err = pool.ExecContext(fencedsql.WithToken(ctx, tok), "UPDATE accounts SET balance = 1 WHERE id = 1")
		return err
	}
	if err := write(20); !errors.Is(err, fencedsql.ErrNotPrimary) {
		t.Errorf("a guarded write through a fenced pool on a subscriber: %v, want ErrNotPrimary", err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("RaiseTokenFloor on a subscriber: %v, want ErrNotPrimary", err)
	}
	if m, err := schema.MaxToken(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("MaxToken on a subscriber: %d, %v, want ErrNotPrimary", m, err)
	}
	var ce *schema.ConfigError
	if err := schema.RaiseTokenFloorReadOnly(ctx, raw, postgres.Dialect, 100); !errors.As(err, &ce) {
		t.Errorf("RaiseTokenFloorReadOnly on PostgreSQL: %v, want a *ConfigError (no read-only primary to raise on)", err)
	}
	if m, err := schema.MaxTokenReadOnly(ctx, raw, postgres.Dialect); !errors.As(err, &ce) || !strings.Contains(err.Error(), "MaxTokenReadOnly") {
		t.Errorf("MaxTokenReadOnly on PostgreSQL: %d, %v, want a *ConfigError naming MaxTokenReadOnly", m, err)
	}
	drop()
	if err := write(20); err != nil {
		t.Errorf("a guarded write after DROP SUBSCRIPTION: %v", err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Errorf("RaiseTokenFloor after DROP SUBSCRIPTION: %v", err)
	}
	if m, err := schema.MaxToken(ctx, raw, postgres.Dialect); err != nil || m != 99 {
		t.Errorf("MaxToken after DROP SUBSCRIPTION: %d, %v, want 99 (below the floor 100)", m, err)
	}
}

// TestRaiseTokenFloorReadOnlyDatabase (red-team rt50c F5): on a database whose
// transactions are read-only by default (ALTER DATABASE … SET
// default_transaction_read_only = on; the same from ALTER SYSTEM or the role: how a
// primary is made read-only for a switch-over) RaiseTokenFloor fails with ErrNotPrimary,
// as on MariaDB's read_only, not with the raise's raw SQLSTATE 25006; nothing is raised.
func TestRaiseTokenFloorReadOnlyDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, raw := serverRoleDB(t, ctx)
	var name string
	if err := raw.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, `ALTER DATABASE "`+name+`" SET default_transaction_read_only = on`)
	db := testdb.Open(t, "pgx", dsn) // new sessions take the database's default
	if err := schema.RaiseTokenFloor(ctx, db, postgres.Dialect, 100); !errors.Is(err, schema.ErrNotPrimary) {
		t.Errorf("RaiseTokenFloor on a database with default_transaction_read_only = on: %v, want ErrNotPrimary", err)
	}
	var f int64
	if err := db.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&f); err != nil || f != 0 {
		t.Errorf("the floor after the refused raise: %d, %v; want 0", f, err)
	}
}
