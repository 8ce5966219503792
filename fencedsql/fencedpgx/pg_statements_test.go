// Conformance cases on PostgreSQL: DELETE, upsert, duplicates, RETURNING, claims, named args, exec modes.

package fencedpgx_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/jackc/pgx/v5"
)

func testDelete(t *testing.T, e *pgEnv) {
	e.seed(9, 1, 2, 3)
	// Stale: refused, nothing deleted (outside a transaction: the wrapper's own).
	_, err := e.db.Exec(tok(e.ctx, 8), "DELETE FROM accounts WHERE id = $1", 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if e.count() != 3 {
		t.Fatal("stale DELETE deleted")
	}
	// Fresh, outside a transaction.
	tag, err := e.db.Exec(tok(e.ctx, 9), "DELETE FROM accounts WHERE id = $1", 1)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("delete: %v %v", tag, err)
	}
	// In the caller's transaction, stale then fresh.
	tx, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, "DELETE FROM accounts WHERE id = $1", 2)
	wantErr(t, err, fencedsql.ErrFenced)
	_ = tx.Rollback(e.ctx)
	tx, err = e.db.Begin(tok(e.ctx, 10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, "DELETE FROM accounts WHERE id = $1", 2); err != nil {
		t.Fatal(err)
	}
	// DELETE … RETURNING in the transaction.
	var id int64
	if err := tx.QueryRow(e.ctx, "DELETE FROM accounts WHERE id = $1 RETURNING id", 3).Scan(&id); err != nil || id != 3 {
		t.Fatalf("delete returning: %d %v", id, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.count() != 0 {
		t.Fatal("rows left")
	}
}

func testUpsert(t *testing.T, e *pgEnv) {
	const up = "INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance"
	e.seed(9, 1)
	_, err := e.db.Exec(tok(e.ctx, 8), up, 1, 5)
	wantErr(t, err, fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 9, 1})
	if _, err := e.db.Exec(tok(e.ctx, 10), up, 1, 5); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{5, 10, 2})
}

func testDuplicate(t *testing.T, e *pgEnv) {
	if _, err := e.db.Exec(tok(e.ctx, 1), "INSERT INTO accounts (id, owner, balance) VALUES (1, 'ann', 1)"); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Exec(tok(e.ctx, 1), "INSERT INTO accounts (id, owner, balance) VALUES (2, 'ann', 1)")
	wantErr(t, err, fencedsql.ErrDuplicate)
	var de *fencedsql.DuplicateError
	if !errors.As(err, &de) || de.Constraint != "accounts_owner_key" {
		t.Fatalf("DuplicateError = %+v", de)
	}
	// Unguarded table, through Query (the error arrives with the rows).
	_, err = e.db.Exec(e.ctx, "CREATE TABLE IF NOT EXISTS tags (name TEXT PRIMARY KEY)")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rows, _ := e.db.Query(e.ctx, "INSERT INTO tags VALUES ('x') RETURNING name")
		for rows.Next() {
		}
		err = rows.Err()
	}
	wantErr(t, err, fencedsql.ErrDuplicate)
}

func testReturning(t *testing.T, e *pgEnv) {
	e.seed(9, 1, 2)
	// Stale: the fencing error arrives through the rows.
	rows, err := e.db.Query(tok(e.ctx, 8), "UPDATE accounts SET balance = 1 WHERE id IN (1, 2) RETURNING id")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
	}
	wantErr(t, err, fencedsql.ErrFenced)
	var bal int64
	if err := e.db.QueryRow(tok(e.ctx, 8), "UPDATE accounts SET balance = 1 WHERE id = 1 RETURNING balance").Scan(&bal); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("QueryRow: %v", err)
	}
	if err := e.db.QueryRow(tok(e.ctx, 9), "UPDATE accounts SET balance = 1 WHERE id = 1 RETURNING balance").Scan(&bal); err != nil || bal != 1 {
		t.Fatalf("fresh QueryRow: %d %v", bal, err)
	}
	wantRow(t, e.row(2), acct{100, 9, 1})
}

// A locking read in a statement that carries a token claims its rows (G10): an older
// holder's late write to them then fails.
func testClaim(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	tx, err := e.db.Begin(tok(e.ctx, 9))
	if err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal); err != nil || bal != 100 {
		t.Fatalf("claim: %d %v", bal, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if a := e.row(1); a.token != 9 {
		t.Fatalf("claim did not stamp the token: %+v", a)
	}
	_, err = e.db.Exec(tok(e.ctx, 7), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	// A stale claim fails (in a transaction; outside one a locking read with a token is
	// refused); without a token it is a plain locking read.
	err = e.db.QueryRow(tok(e.ctx, 8), "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal)
	wantErr(t, err, fencedsql.ErrUnsupported)
	stale, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	err = stale.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal)
	wantErr(t, err, fencedsql.ErrFenced)
	_ = stale.Rollback(e.ctx)
	if err := e.db.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{100, 9, 2})
}

func testNamedArgs(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	q := "UPDATE accounts SET balance = balance - @amount WHERE id = @id"
	if _, err := e.db.Exec(tok(e.ctx, 6), q, pgx.NamedArgs{"amount": 3, "id": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Exec(tok(e.ctx, 5), q, pgx.NamedArgs{"amount": 3, "id": 1})
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = e.db.Exec(e.ctx, q, pgx.NamedArgs{"amount": 3, "id": 1})
	wantErr(t, err, fencedsql.ErrNoToken)
	var bal int64
	if err := e.db.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = @id", pgx.NamedArgs{"id": 1}).Scan(&bal); err != nil || bal != 97 {
		t.Fatalf("named read: %d %v", bal, err)
	}
	wantRow(t, e.row(1), acct{97, 6, 2})
}

// pgx's per-call QueryExecMode argument works in front of a fenced statement.
func testModeArgument(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	for i, m := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec} {
		if _, err := e.db.Exec(tok(e.ctx, uint64(6+i)), debit, m, 1, 1); err != nil {
			t.Fatalf("mode %v: %v", m, err)
		}
		_, err := e.db.Exec(tok(e.ctx, 5), debit, m, 1, 1)
		wantErr(t, err, fencedsql.ErrFenced)
	}
	wantRow(t, e.row(1), acct{97, 8, 4})
}
