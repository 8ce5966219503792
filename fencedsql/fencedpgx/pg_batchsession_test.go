// Session checks on PostgreSQL that depend on when a statement runs: the statements of
// a batch after one that changes the session.

package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// hiddenWrite reads, on the wrapper's lexer (standard_conforming_strings on), as
// WITH s AS (SELECT '<string>' AS a) SELECT a FROM s: a plain read. A server reading
// it with standard_conforming_strings off sees a data-modifying CTE that zeroes row 1 of
// accounts and its token, with no token of its own.
const hiddenWrite = `WITH s AS (SELECT '\'' AS a), w AS (UPDATE accounts SET balance = 0, fence_token = 0 WHERE id = 1 RETURNING 1) SELECT 1 FROM s -- ' AS a) SELECT a FROM s`

func sessRow(t *testing.T, ctx context.Context, raw *pgxpool.Pool) (bal, tk int64) {
	t.Helper()
	if err := raw.QueryRow(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tk); err != nil {
		t.Fatal(err)
	}
	return bal, tk
}

// A batch's statements are all checked before it is sent, on the session as it was
// before the batch; the server runs each after the ones before it. A statement that
// may change the session or name resolution followed by others is therefore refused
// (ErrUnsupported, nothing sent): queued first, SET standard_conforming_strings = off
// made the server read hiddenWrite's UPDATE of accounts, which landed without a token
// in the exec, describe_exec and cache_describe modes (red-team F1). Alone, or last,
// such a statement still goes; the next statement is then judged on the session it
// left.
func TestBatchSessionChangeFollowed(t *testing.T) {
	dsn0 := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw := openPool(t, ctx, dsn0, 2)
	if _, err := raw.Exec(ctx, plainAccounts+` INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 10);`); err != nil {
		t.Fatal(err)
	}
	changes := []string{
		"SET standard_conforming_strings = off",
		"SET LOCAL standard_conforming_strings = off",
		"SELECT set_config('standard_conforming_strings', 'off', false)",
		"SET search_path = pg_temp, public",
		"RESET ALL",
	}
	for _, mode := range []string{"exec", "describe_exec", "cache_describe", "cache_statement", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			dsn := fencetest.WithParam(dsn0, "default_query_exec_mode="+mode)
			db, err := fencedpgx.New(openPool(t, ctx, dsn, 1), fencedsql.Guard("accounts"))
			if err != nil {
				t.Fatal(err)
			}
			for _, change := range changes {
				b := &pgx.Batch{}
				b.Queue(change)
				b.Queue(hiddenWrite)
				err := db.SendBatch(ctx, b).Close()
				if bal, tk := sessRow(t, ctx, raw); bal != 100 || tk != 10 {
					t.Fatalf("%s, then a statement, in one batch: an UPDATE of accounts with no token landed, row 1 = (%d, %d) (err %v)", change, bal, tk, err)
				}
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("%s, then a statement, in one batch: err = %v, want ErrUnsupported", change, err)
				}
				// In a transaction too, with a token.
				tx, err := db.Begin(tok(ctx, 11))
				if err != nil {
					t.Fatal(err)
				}
				b = &pgx.Batch{}
				b.Queue(change)
				b.Queue("UPDATE accounts SET balance = 1 WHERE id = 1")
				if err := tx.SendBatch(ctx, b).Close(); !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("%s, then an UPDATE, in a transaction's batch: err = %v, want ErrUnsupported", change, err)
				}
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			}
			// Alone, and last, the setting goes. Then, sent alone, the statement is
			// judged on the session the setting left: refused.
			c, err := openPool(t, ctx, dsn, 1).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Release()
			conn, err := fencedpgx.NewConn(c.Conn(), fencedsql.Guard("accounts"))
			if err != nil {
				t.Fatal(err)
			}
			b := &pgx.Batch{}
			b.Queue("SET standard_conforming_strings = on")
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				t.Fatalf("a lone SET in a batch: %v", err)
			}
			b = &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SET standard_conforming_strings = off")
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				t.Fatalf("a SET last in a batch: %v", err)
			}
			var se *fencedsql.SessionError
			if _, err := conn.Exec(ctx, hiddenWrite); !errors.As(err, &se) {
				t.Fatalf("the statement after the batch's SET: err = %v, want a SessionError", err)
			}
			b = &pgx.Batch{}
			b.Queue(hiddenWrite)
			if err := conn.SendBatch(ctx, b).Close(); !errors.As(err, &se) {
				t.Fatalf("a batch after the SET: err = %v, want a SessionError", err)
			}
			if bal, tk := sessRow(t, ctx, raw); bal != 100 || tk != 10 {
				t.Fatalf("row 1 = (%d, %d), want (100, 10)", bal, tk)
			}
			if _, err := conn.Exec(ctx, "SET standard_conforming_strings = on"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A function queued earlier in a batch may change the session from inside its body,
// which no text of the batch shows: a statement whose reading depends on the session
// (a backslash, a non-ASCII byte) is refused unless it is the batch's first. First, or
// after nothing, it is judged on the session as it is.
func TestBatchReadingAfterFunction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, raw, db := oneConnDB(t, ctx, ` INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 10);
CREATE FUNCTION flip() RETURNS int LANGUAGE sql AS $f$ SELECT 1 FROM (SELECT pg_catalog.set_config('standard_conforming_strings', 'off', false)) s $f$;`)
	b := &pgx.Batch{}
	b.Queue("SELECT flip()")
	b.Queue(hiddenWrite)
	if err := db.SendBatch(ctx, b).Close(); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("a reading-dependent statement after a function in one batch = %v, want ErrUnsupported", err)
	}
	if bal, tk := sessRow(t, ctx, raw); bal != 100 || tk != 10 {
		t.Fatalf("row 1 = %d/%d after the refused batch, want 100/10", bal, tk)
	}
	// First in a batch, or with plain text after it, it is sent.
	b = &pgx.Batch{}
	b.Queue(`SELECT 'a\b'`)
	b.Queue("SELECT 1")
	if err := db.SendBatch(ctx, b).Close(); err != nil {
		t.Fatalf("a reading-dependent statement first in a batch: %v", err)
	}
}
