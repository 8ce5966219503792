package fencedpgx_test

// Red-team rt35b: the wrapper's own transaction around an autocommit DELETE, through
// fencedpgx's native API (the rt20m tracer ends a statement's context).

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestNativeOwnDeleteTxCancelledNotCommitted (cosmetic: error typed with
// the wrong outcome; rt35b F1 through fencedpgx). db.Exec of a DELETE on a table
// without the guard runs in a transaction of the wrapper's own: the located fencing
// UPDATE (WITH …), the DELETE, COMMIT. The context ends right before the DELETE is
// sent: pgx does not send it, the wrapper rolls its transaction back, row 1 is
// unchanged and the pool's only connection is back in autocommit (all of which holds).
// CommitOutcome calls the error Unknown, though the wrapper never sent its COMMIT.
// Right behaviour: NotCommitted (the error wraps fencedsql.ErrNotCommitted).
func TestNativeOwnDeleteTxCancelledNotCommitted(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := &cutBeforeTracer{}
	cfg.ConnConfig.Tracer = tr
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
		INSERT INTO accounts VALUES (1, 100, 0, 0), (2, 100, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	db, err := fencedpgx.New(pool, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	del := "DELETE"
	tr.prefix.Store(&del)
	_, derr := db.Exec(fencedsql.WithToken(ctx, 10), "DELETE FROM accounts WHERE id = 1")
	tr.prefix.Store(nil)
	if !tr.fired.Load() {
		t.Fatalf("set-up: no DELETE was sent (err %v)", derr)
	}
	var n, tok int64
	if err := pool.QueryRow(ctx, "SELECT count(*), coalesce(max(fence_token), 0) FROM accounts WHERE id = 1").Scan(&n, &tok); err != nil {
		t.Fatal(err)
	}
	var a, b int64
	e1 := db.QueryRow(ctx, "SELECT txid_current()").Scan(&a)
	e2 := db.QueryRow(ctx, "SELECT txid_current()").Scan(&b)
	t.Logf("DELETE: %v (outcome %v); row 1 count %d token %d; next statements in autocommit %v (%v, %v)", derr, fencedsql.CommitOutcome(derr), n, tok, a != b, e1, e2)
	if !errors.Is(derr, context.Canceled) || n != 1 || tok != 0 || e1 != nil || e2 != nil || a == b {
		t.Fatalf("DELETE %v, row 1 count %d token %d, autocommit %v; want context.Canceled, row 1 unchanged, a clean connection", derr, n, tok, a != b)
	}
	if o := fencedsql.CommitOutcome(derr); o != fencedsql.NotCommitted {
		t.Errorf("CommitOutcome(DELETE error) = %v; want NotCommitted (the wrapper rolled back its own transaction before sending COMMIT)", o)
	}
}
