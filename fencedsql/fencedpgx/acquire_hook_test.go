package fencedpgx_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// red-team rt44b F3: a pgxpool hook (PrepareConn / BeforeAcquire — the usual multi-tenant pattern:
// set the tenant's search_path at each acquire) moves a connection's search_path
// after the wrapper read that connection's name resolution and cached its verdict on
// the guarded name. The next guarded write on that connection resolves `accounts`
// to the other schema's table — here one whose fencing columns are nullable, which a
// fresh check refuses (ErrSchema) — and is judged by the verdict of the first.
// Want: the write refused (ErrSchema), as it is on a pool whose connections start on
// that search_path (control).
func TestPrepareConnMovingSearchPathIsRechecked(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := openPool(t, ctx, dsn, 1)
	if _, err := raw.Exec(ctx, `CREATE SCHEMA t1; CREATE SCHEMA t2;
		CREATE TABLE t1.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
		CREATE TABLE t2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL, version BIGINT NULL);
		INSERT INTO t1.accounts (id, fence_token) VALUES (1, 10);
		INSERT INTO t2.accounts (id, fence_token, version) VALUES (1, NULL, NULL);`); err != nil {
		t.Fatal(err)
	}
	// Control: a pool whose connections start on t2 refuses the table.
	{
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = "t2"
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		fp, err := fencedpgx.New(p, fencedsql.Guard("accounts"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = fp.Exec(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 1 WHERE id = 1`)
		fp.Close()
		p.Close()
		if !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("control, search_path t2 from the start: %v; want ErrSchema (nullable fencing columns)", err)
		}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	var tenant atomic.Value
	tenant.Store("t1")
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		_, err := c.Exec(ctx, "SELECT pg_catalog.set_config('search_path', $1, false)", tenant.Load().(string))
		return err == nil, err
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	fp, err := fencedpgx.New(p, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fp.Exec(fencedsql.WithToken(ctx, 20), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatalf("tenant t1: fresh UPDATE: %v", err)
	}
	tenant.Store("t2")
	_, err = fp.Exec(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal int64
	var tok, ver *int64
	if qerr := raw.QueryRow(ctx, `SELECT balance, fence_token, version FROM t2.accounts WHERE id = 1`).Scan(&bal, &tok, &ver); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("tenant t2 after the hook moved search_path: %v (t2 row: balance %d token %v version %v); want ErrSchema as on a pool opened on t2", err, bal, tok, ver)
	}
}
