package fencedpgx_test

// Red-team rt20m: a context that ends between the two statements of a fenced DELETE,
// through fencedpgx's native API.

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt20mTracer ends the context of the first statement that starts with prefix, as a
// deadline passing right before it is sent would.
type rt20mTracer struct {
	prefix atomic.Pointer[string]
	fired  atomic.Bool
}

func (tr *rt20mTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	p := tr.prefix.Load()
	if p != nil && strings.HasPrefix(strings.ToUpper(strings.TrimSpace(d.SQL)), *p) && tr.fired.CompareAndSwap(false, true) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		return c
	}
	return ctx
}

func (tr *rt20mTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestRTrt20mNativeDeleteContextEndsBetweenStatementsCommitsStamp (data change on
// error): red-team rt20m F1, through fencedpgx. In a fencedpgx Tx, a DELETE of a table
// without the guard runs as the fencing UPDATE, then the DELETE. The context ends
// right before the DELETE is sent: pgx does not send it, the server sees no error,
// the wrapper does not mark the transaction (stamp_kept.go trusts PostgreSQL to have
// aborted it), and Commit commits row 1 stamped (token 10, version 1) by a DELETE
// that returned an error. pgx does not roll a transaction back when a statement's
// context ends, so any statement context can do this, not only one distinct from the
// transaction's. Right behaviour: Commit fails (NotCommitted) and row 1 is unchanged.
func TestRTrt20mNativeDeleteContextEndsBetweenStatementsCommitsStamp(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := &rt20mTracer{}
	cfg.ConnConfig.Tracer = tr
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
	tx, err := db.Begin(fencedsql.WithToken(ctx, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	del := "DELETE"
	tr.prefix.Store(&del)
	_, derr := tx.Exec(ctx, "DELETE FROM accounts WHERE id = 1")
	if derr == nil {
		t.Fatalf("set-up: the DELETE succeeded; want its second statement refused by the ended context")
	}
	cerr := tx.Commit(ctx)
	var n, tok, ver int64
	if err := pool.QueryRow(ctx, "SELECT count(*), coalesce(max(fence_token), 0), coalesce(max(version), 0) FROM accounts WHERE id = 1").Scan(&n, &tok, &ver); err != nil {
		t.Fatal(err)
	}
	t.Logf("DELETE: %v; Commit: %v; row 1: %d row(s), token %d, version %d", derr, cerr, n, tok, ver)
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Errorf("Commit after the DELETE failed between its statements: %v; want NotCommitted", cerr)
	}
	if n != 1 || tok != 0 || ver != 0 {
		t.Errorf("row 1: %d row(s), token %d, version %d; want it unchanged (1 row, token 0, version 0)", n, tok, ver)
	}
}
