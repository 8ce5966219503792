package postgres_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// red-team rt44b F3, database/sql: pgx's stdlib.OptionResetSession hook runs on each reuse of a
// pooled connection (database/sql's ResetSession, which the wrapper forwards) and
// moves its search_path to the tenant's schema unseen: the verdict cached for
// `accounts` on t1 then covers t2.accounts, whose fencing columns are nullable (a
// fresh check refuses it: ErrSchema). Want ErrSchema.
func TestResetSessionHookMovingSearchPathIsRechecked(t *testing.T) {
	tenantSwitchRechecked(t, "ResetSession hook", func(cfg *pgx.ConnConfig, setPath func(context.Context, *pgx.Conn) error) driver.Connector {
		return stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(setPath), stdlib.OptionResetSession(setPath))
	})
}

// tenantSwitchRechecked sets up tenants t1 (accounts with NOT NULL fencing columns)
// and t2 (accounts whose fencing columns are nullable: a fresh check refuses it), and
// opens a fenced pool of one connection on connect's connector, given the pgx
// configuration and a hook that sets the current tenant's search_path. A fresh
// UPDATE under tenant t1 must pass; after the tenant moves to t2, a stale UPDATE must
// fail with ErrSchema (the verdict cached on t1 does not cover t2).
func tenantSwitchRechecked(t *testing.T, what string, connect func(cfg *pgx.ConnConfig, setPath func(context.Context, *pgx.Conn) error) driver.Connector) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := rawWith(t, dsn, `CREATE SCHEMA t1`, `CREATE SCHEMA t2`,
		`CREATE TABLE t1.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE t2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL, version BIGINT NULL)`,
		`INSERT INTO t1.accounts (id, fence_token) VALUES (1, 10)`,
		`INSERT INTO t2.accounts (id, fence_token, version) VALUES (1, NULL, NULL)`)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var tenant atomic.Value
	tenant.Store("t1")
	setPath := func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SELECT pg_catalog.set_config('search_path', $1, false)", tenant.Load().(string))
		return err
	}
	db := fencedsql.OpenDB(connect(cfg, setPath), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatalf("tenant t1: fresh UPDATE: %v", err)
	}
	tenant.Store("t2")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal int64
	var tok, ver *int64
	if qerr := raw.QueryRowContext(ctx, `SELECT balance, fence_token, version FROM t2.accounts WHERE id = 1`).Scan(&bal, &tok, &ver); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("tenant t2 after %s moved search_path: %v (t2 row: balance %d token %v version %v); want ErrSchema", what, err, bal, tok, ver)
	}
}

// red-team rt44b F3, the same hook turning synchronous_commit off on reuse (a "fast tenant" or a
// batch-job setting): a session check that refuses synchronous_commit=off from the DSN
// (internal/redteam: pg_txrevert_test "synchronous_commit=off from the DSN") does not
// see it, and guarded writes commit asynchronously. Want ErrSchema.
func TestResetSessionHookSyncCommitOffIsRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, fence_token) VALUES (1, 10)`)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var mode atomic.Value
	mode.Store("on")
	set := func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SELECT pg_catalog.set_config('synchronous_commit', $1, false)", mode.Load().(string))
		return err
	}
	db := fencedsql.OpenDB(stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(set), stdlib.OptionResetSession(set)),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	// Control: a connection that starts with it off (the same hook's AfterConnect) is refused.
	mode.Store("off")
	ctl := fencedsql.OpenDB(stdlib.GetConnector(*cfg, stdlib.OptionAfterConnect(set)),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	_, err = ctl.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE accounts SET balance = 1 WHERE id = 1`)
	ctl.Close()
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("control, synchronous_commit=off from the connection's start: %v; want ErrSchema", err)
	}
	mode.Store("on")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatalf("synchronous_commit on: fresh UPDATE: %v", err)
	}
	mode.Store("off")
	var now string
	if err := db.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&now); err != nil || now != "off" {
		t.Fatalf("the hook did not run: %q %v", now, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), `UPDATE accounts SET balance = 2 WHERE id = 1`); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("guarded write after ResetSession set synchronous_commit=off: %v; want ErrSchema (as from the DSN)", err)
	}
}

// The judge behind the re-arming: pgx's own no-op reset keeps the session (a pool
// without a hook pays nothing per reuse), a hook of the application's does not.
func TestResetKeepsSessionOnlyWithoutHook(t *testing.T) {
	dsn := testdb.Postgres(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	judge := postgres.Dialect.(dialect.ResetJudge)
	for _, c := range []struct {
		name string
		opts []stdlib.OptionOpenDB
		want bool
	}{
		{"no hook", nil, true},
		{"OptionResetSession", []stdlib.OptionOpenDB{stdlib.OptionResetSession(func(context.Context, *pgx.Conn) error { return nil })}, false},
	} {
		db := sql.OpenDB(stdlib.GetConnector(*cfg, c.opts...))
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var got bool
		if err := conn.Raw(func(raw any) error { got = judge.ResetKeepsSession(raw.(driver.Conn)); return nil }); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		db.Close()
		if got != c.want {
			t.Errorf("%s: ResetKeepsSession %v, want %v", c.name, got, c.want)
		}
	}
}
