// Savepoints sent as SQL text: refused outside a transaction the wrapper began, passed
// inside one.

package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
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
