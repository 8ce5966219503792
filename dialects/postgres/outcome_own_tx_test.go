package postgres_test

// Red-team rt35b: fail closed, second round — a context or server timeout in the
// middle of a multi-statement fenced operation. Uses the rt20m hooked driver
// (second_statement_failure_test.go): the wrapper's own transaction around an autocommit DELETE on a
// table without the guard runs the located fencing UPDATE (WITH …) and then the DELETE.

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// notInTx reports whether the next statements on db's only connection run
// outside any transaction (two txid_current() calls differ only in autocommit).
func notInTx(t *testing.T, db *sql.DB) (bool, error) {
	t.Helper()
	var a, b int64
	if err := db.QueryRow(`SELECT txid_current()`).Scan(&a); err != nil {
		return false, err
	}
	if err := db.QueryRow(`SELECT txid_current()`).Scan(&b); err != nil {
		return false, err
	}
	return a != b, nil
}

// childLock makes a DELETE of accounts row 1 wait: a child row referencing it,
// inserted and deleted by a transaction left open, makes the DELETE's foreign-key
// check wait for that transaction (the fencing UPDATE, which changes no key, does
// not wait). It returns the function ending that transaction.
func childLock(t *testing.T, raw *sql.DB) func() {
	t.Helper()
	if _, err := raw.Exec(`CREATE TABLE rt35b_child (id BIGINT PRIMARY KEY, acc BIGINT REFERENCES accounts(id))`); err != nil {
		t.Fatal(err)
	}
	holder, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(`INSERT INTO rt35b_child VALUES (1, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(`DELETE FROM rt35b_child WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	return func() { _ = holder.Rollback() }
}

// TestOwnDeleteTxDeadlineNotCommitted (cosmetic, as above).
// The DELETE of the wrapper's own transaction waits (a foreign-key check on a child
// row another transaction holds) and the statement's deadline passes: pgx drops the
// connection, the wrapper's COMMIT is never sent, the server rolls the transaction
// back — row 1 is unchanged and the pool hands out a clean connection (holds). The
// error is classified Unknown. Right behaviour: NotCommitted (the wrapper's COMMIT was
// never sent; only the DELETE was in flight, inside a transaction the wrapper never
// committed).
func TestOwnDeleteTxDeadlineNotCommitted(t *testing.T) {
	raw, fenced := hookedOpen(t)
	fenced.SetMaxOpenConns(1)
	release := childLock(t, raw)
	ctx, cancel := context.WithTimeout(fencedsql.WithToken(context.Background(), 10), 1500*time.Millisecond)
	defer cancel()
	_, derr := fenced.ExecContext(ctx, "DELETE FROM accounts WHERE id = 1")
	release()
	exists, tok, ver := hookedRow(t, raw, 1)
	auto, aerr := notInTx(t, fenced)
	t.Logf("DELETE: %v (outcome %v); row 1 exists %v tok %d ver %d; autocommit %v (%v)", derr, fencedsql.CommitOutcome(derr), exists, tok, ver, auto, aerr)
	if !errors.Is(derr, context.DeadlineExceeded) {
		t.Fatalf("set-up: DELETE error %v; want context.DeadlineExceeded while the DELETE waited", derr)
	}
	if !exists || tok != 0 || ver != 0 || aerr != nil || !auto {
		t.Errorf("row 1 exists %v tok %d ver %d, autocommit %v (%v); want unchanged and a clean connection", exists, tok, ver, auto, aerr)
	}
	if o := fencedsql.CommitOutcome(derr); o != fencedsql.NotCommitted {
		t.Errorf("CommitOutcome(DELETE error) = %v; want NotCommitted (the wrapper's own COMMIT was never sent)", o)
	}
}

// TestOwnDeleteTxStatementTimeoutNotCommitted (cosmetic, as above). The
// same wait ended by the server's statement_timeout (SQLSTATE 57014, class 57): the
// wrapper rolls its transaction back (ROLLBACK answered), nothing changed, the
// connection is clean (holds) — and the error is classified Unknown (class 57 counts
// as a lost connection). Right behaviour: a server error on a statement of the
// wrapper's own transaction, which it then rolled back, is NotCommitted.
func TestOwnDeleteTxStatementTimeoutNotCommitted(t *testing.T) {
	raw, fenced := hookedOpen(t)
	fenced.SetMaxOpenConns(1)
	release := childLock(t, raw)
	defer release()
	ctx := fencedsql.WithToken(context.Background(), 10)
	conn, err := fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET statement_timeout = 700"); err != nil {
		t.Fatalf("SET statement_timeout: %v", err)
	}
	_, derr := conn.ExecContext(ctx, "DELETE FROM accounts WHERE id = 1")
	var x1, x2 int64
	aerr := conn.QueryRowContext(ctx, `SELECT txid_current()`).Scan(&x1)
	if aerr == nil {
		aerr = conn.QueryRowContext(ctx, `SELECT txid_current()`).Scan(&x2)
	}
	conn.Close()
	release()
	exists, tok, ver := hookedRow(t, raw, 1)
	var pe *pgconn.PgError
	if !errors.As(derr, &pe) || pe.Code != "57014" {
		t.Fatalf("set-up: DELETE error %v; want the server's statement timeout (57014)", derr)
	}
	t.Logf("DELETE: %v (outcome %v); row 1 exists %v tok %d ver %d; autocommit %v (%v)", derr, fencedsql.CommitOutcome(derr), exists, tok, ver, x1 != x2, aerr)
	if !exists || tok != 0 || ver != 0 || aerr != nil || x1 == x2 {
		t.Errorf("row 1 exists %v tok %d ver %d; want unchanged and a clean connection", exists, tok, ver)
	}
	if o := fencedsql.CommitOutcome(derr); o != fencedsql.NotCommitted {
		t.Errorf("CommitOutcome(DELETE error) = %v; want NotCommitted (the wrapper rolled back its own transaction)", o)
	}
}
