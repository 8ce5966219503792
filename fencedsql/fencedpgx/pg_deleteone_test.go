package fencedpgx_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The one-statement DELETE (guard installed) in every pgx query exec mode, through
// fencedpgx and through database/sql: it deletes, reports the rows, and fails with
// ErrFenced on a newer row, deleting nothing.
func TestPGDeleteOneStatementModes(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			std, err := sql.Open("pgx", e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer std.Close()
			fencetest.Guard(t, e.ctx, std, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
			ins := "INSERT INTO accounts (id, owner, balance) VALUES ($1, $2, 0)"
			ctx := func(tok uint64) context.Context { return fencedsql.WithToken(e.ctx, tok) }
			for _, id := range []int64{1, 2, 3} {
				if _, err := e.db.Exec(ctx(5), ins, id, fmt.Sprint("o", id)); err != nil {
					t.Fatal(err)
				}
			}
			tag, err := e.db.Exec(ctx(6), "DELETE FROM accounts WHERE id IN ($1, $2)", 1, 2)
			if err != nil || tag.RowsAffected() != 2 {
				t.Fatalf("fencedpgx DELETE: %q, %v", tag.String(), err)
			}
			if _, err := e.db.Exec(ctx(9), "UPDATE accounts SET balance = 1 WHERE id = $1", 3); err != nil {
				t.Fatal(err)
			}
			if _, err := e.db.Exec(ctx(7), "DELETE FROM accounts WHERE id = $1", 3); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale fencedpgx DELETE: %v, want ErrFenced", err)
			}
			fdb, err := sql.Open("fenced-pgx", fencetest.WithParam(e.dsn, "fenced_tables=accounts"))
			if err != nil {
				t.Fatal(err)
			}
			defer fdb.Close()
			if _, err := fdb.ExecContext(ctx(8), "DELETE FROM accounts WHERE id = $1", 3); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale database/sql DELETE: %v, want ErrFenced", err)
			}
			res, err := fdb.ExecContext(ctx(10), "DELETE FROM accounts WHERE id = $1", 3)
			if err != nil {
				t.Fatalf("database/sql DELETE: %v", err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("RowsAffected = %d", n)
			}
			// The tombstones hold the deleters' tokens: re-inserts below them are fenced.
			if _, err := e.db.Exec(ctx(5), ins, 1, "o1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("re-insert under 5 after a DELETE under 6: %v, want ErrFenced", err)
			}
			if _, err := e.db.Exec(ctx(9), ins, 3, "o3"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("re-insert under 9 after a DELETE under 10: %v, want ErrFenced", err)
			}
		})
	}
}

// Red-team rt20m: a context that ends between the two statements of a fenced DELETE,
// through fencedpgx's native API.

// cutBeforeTracer ends the context of the first statement that starts with prefix, as a
// deadline passing right before it is sent would.
type cutBeforeTracer struct {
	prefix atomic.Pointer[string]
	fired  atomic.Bool
}

func (tr *cutBeforeTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	p := tr.prefix.Load()
	if p != nil && strings.HasPrefix(strings.ToUpper(strings.TrimSpace(d.SQL)), *p) && tr.fired.CompareAndSwap(false, true) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		return c
	}
	return ctx
}

func (tr *cutBeforeTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestNativeDeleteContextEndingBetweenStatementsFailsCommit (data change on
// error): red-team rt20m F1, through fencedpgx. In a fencedpgx Tx, a DELETE of a table
// without the guard runs as the fencing UPDATE, then the DELETE. The context ends
// right before the DELETE is sent: pgx does not send it, the server sees no error,
// the wrapper does not mark the transaction (stamp_kept.go trusts PostgreSQL to have
// aborted it), and Commit commits row 1 stamped (token 10, version 1) by a DELETE
// that returned an error. pgx does not roll a transaction back when a statement's
// context ends, so any statement context can do this, not only one distinct from the
// transaction's. Right behaviour: Commit fails (NotCommitted) and row 1 is unchanged.
func TestNativeDeleteContextEndingBetweenStatementsFailsCommit(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	tr := &cutBeforeTracer{}
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
