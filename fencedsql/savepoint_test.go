// Savepoints sent as SQL text: refused outside a transaction the wrapper began, passed
// inside one.

package fencedsql_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// On SQLite, SAVEPOINT in autocommit opens a transaction the wrapper does not know
// of: outside a wrapper transaction SAVEPOINT, RELEASE and ROLLBACK TO are refused
// (ErrUnsupported, nothing sent, so no transaction is left open and the wrapper's own
// DELETE still runs); inside db.BeginTx they work as savepoints (ROLLBACK TO undoes
// the fenced write after it, the commit keeps the one before), in every spelling.
func TestSQLiteSavepointText(t *testing.T) {
	db := openSQLite(t, "")
	ctx := fencedsql.WithToken(context.Background(), 9)
	if _, err := db.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (1, 1), (2, 2)`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"SAVEPOINT a", "savepoint \"a\"", "RELEASE a", "RELEASE SAVEPOINT a", "ROLLBACK TO a", "ROLLBACK TRANSACTION TO SAVEPOINT a", "SELECT 1; SAVEPOINT a", "/* c */ SAVEPOINT a"} {
		if _, err := db.ExecContext(context.Background(), q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q outside a transaction: %v, want ErrUnsupported", q, err)
		}
		rows, err := db.QueryContext(context.Background(), q)
		if err == nil {
			rows.Close()
		}
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q as a query outside a transaction: %v, want ErrUnsupported", q, err)
		}
		st, err := db.PrepareContext(context.Background(), q)
		if err == nil {
			st.Close()
		}
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q prepared outside a transaction: %v, want ErrUnsupported", q, err)
		}
	}
	// No transaction was opened: the wrapper's two-statement DELETE runs.
	if _, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = 2`); err != nil {
		t.Fatalf("DELETE after the refused savepoints: %v", err)
	}
	// Inside a wrapper transaction they are savepoints.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	steps := []string{
		"UPDATE accounts SET balance = 10 WHERE id = 1",
		"SAVEPOINT a",
		"UPDATE accounts SET balance = 20 WHERE id = 1",
		"ROLLBACK TO SAVEPOINT a",
		"RELEASE a",
	}
	for _, q := range steps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("%q in a transaction: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var bal int
	if err := db.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&bal); err != nil || bal != 10 {
		t.Fatalf("balance = %d, %v; want 10 (the write before the savepoint)", bal, err)
	}
}

// Red-team rt28a F3: the savepoint rule (plan.Plan.TxOnly) judged at each execution of
// a prepared statement, not only when it is prepared.

// TestSQLitePreparedSavepointOutsideTxRefused (fail-open of G11's savepoint rule).
// A savepoint statement sent as text, or prepared, outside a wrapper transaction is
// refused on SQLite (TestSQLiteSavepointText): SQLite's SAVEPOINT in autocommit opens a
// transaction the wrapper does not know of. The rule is judged only when the statement
// is PREPARED (conn.route's TxOnly). A statement prepared on a *sql.Conn while its Tx
// is open survives the Tx (database/sql closes only tx.Prepare's statements), and its
// later executions outside any transaction are not judged again (passStmt.refusedInTx
// re-checks ImplicitCommit, not TxOnly): `SAVEPOINT a` runs in autocommit and leaves
// the connection inside a transaction the wrapper does not know of — the wrapper's
// own two-statement DELETE then fails ("cannot start a transaction within a
// transaction"), and a fenced UPDATE that reports success is never committed once the
// connection is closed.
//
// Right behaviour: a TxOnly statement is judged at each execution, like ImplicitCommit:
// executed on a connection without a wrapper transaction it is refused with
// ErrUnsupported, nothing sent.
func TestSQLitePreparedSavepointOutsideTxRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 1), (2, 2, 1)`)
	db := testdb.Open(t, "fenced-sqlite", "file:"+path+"?fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	ctx := fencedsql.WithToken(context.Background(), 9)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := conn.PrepareContext(ctx, "SAVEPOINT a") // inside the transaction: allowed
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// No wrapper transaction now: as text this is refused.
	if _, err := conn.ExecContext(ctx, "SAVEPOINT a"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("SAVEPOINT as text outside a transaction: %v, want ErrUnsupported", err)
	}
	_, err = st.ExecContext(ctx)
	if errors.Is(err, fencedsql.ErrUnsupported) {
		return // the right behaviour
	}
	// An acknowledged fenced autocommit write, then the wrapper's own DELETE.
	_, uerr := conn.ExecContext(ctx, `UPDATE accounts SET balance = 99 WHERE id = 1`)
	_, delErr := conn.ExecContext(ctx, `DELETE FROM accounts WHERE id = 2`)
	var seen int
	if qerr := raw.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&seen); qerr != nil {
		t.Logf("reading through another connection: %v", qerr)
	}
	t.Errorf("prepared SAVEPOINT executed outside any transaction: err = %v, want ErrUnsupported (nothing sent). "+
		"Afterwards: fenced UPDATE err = %v, yet another connection reads balance %d (want 99: the write sits in a transaction the wrapper does not know of); "+
		"the wrapper's two-statement DELETE: %v", err, uerr, seen, delErr)
}
