// Guard cases: plain-driver writes and deletes that bypass the wrapper, refused by the database.

package fencetest

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Plain-driver writes that bypass the wrapper are refused by the database.
func (s *guardSuite) testRefusesBypass(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1, 2, 3)
	s.install(e, "accounts")
	before := map[int64]row{1: e.row(1), 2: e.row(2), 3: e.row(3)}
	for _, c := range []struct{ what, sql string }{
		{"UPDATE not touching the version", "UPDATE accounts SET balance = 0 WHERE id = 1"},
		{"multi-row UPDATE not touching the version", "UPDATE accounts SET balance = 0"},
		{"UPDATE keeping the version", "UPDATE accounts SET balance = 0, version = version WHERE id = 1"},
		{"UPDATE lowering the version", "UPDATE accounts SET balance = 0, version = version - 1, fence_token = 9 WHERE id = 1"},
		{"UPDATE lowering the token", "UPDATE accounts SET balance = 0, version = version + 1, fence_token = 4 WHERE id = 1"},
		{"UPDATE resetting the token", "UPDATE accounts SET balance = 0, version = version + 1, fence_token = 0"},
	} {
		_, err := e.raw.ExecContext(e.ctx, c.sql)
		s.wantGuard(t, err, c.what)
	}
	// An upsert whose UPDATE branch runs through the plain driver.
	_, err := e.raw.ExecContext(e.ctx, e.q(s.b.Upsert), 1, 555)
	s.wantGuard(t, err, "plain upsert")
	for id, r := range before {
		if got := e.row(id); got != r {
			t.Fatalf("a refused write changed row %d: %+v, was %+v", id, got, r)
		}
	}
	// The guard checks the protocol, not the token's origin: a plain UPDATE that
	// raises the version and does not lower the token passes.
	if _, err := e.raw.ExecContext(e.ctx, "UPDATE accounts SET balance = 1, version = version + 1, fence_token = 6 WHERE id = 1"); err != nil {
		t.Fatalf("protocol-following plain UPDATE: %v", err)
	}
	// The fenced driver still fences on top of it.
	_, err = e.db.ExecContext(tok(e.ctx, 5), e.q("UPDATE accounts SET balance = 2 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 1 || r.token != 6 {
		t.Fatalf("row 1 = %+v", r)
	}
}

// PostgreSQL refuses a DELETE of rows the transaction did not fence first; MySQL and
// SQLite cannot tell (documented limit).
func (s *guardSuite) testDelete(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1, 2, 3, 4, 5)
	s.install(e, "accounts")
	_, err := e.raw.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 1)
	if s.b.Name != "postgres" {
		if err != nil {
			t.Fatalf("plain DELETE on %s: %v (the guard is documented not to cover DELETE here)", s.b.Name, err)
		}
		if e.count() != 4 {
			t.Fatal("plain DELETE did not delete")
		}
		// The wrapper's DELETE works with the guard installed.
		if _, err := e.db.ExecContext(tok(e.ctx, 6), e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
			t.Fatal(err)
		}
		if e.count() != 3 {
			t.Fatal("fenced DELETE did not delete")
		}
		return
	}
	s.wantGuard(t, err, "plain DELETE")
	_, err = e.raw.ExecContext(e.ctx, "DELETE FROM accounts")
	s.wantGuard(t, err, "plain DELETE of all rows")
	_, err = e.raw.ExecContext(e.ctx, "TRUNCATE accounts")
	s.wantGuard(t, err, "TRUNCATE")
	if n := e.count(); n != 5 {
		t.Fatalf("refused DELETEs removed rows: %d left", n)
	}

	// A transaction that locked the row but did not write it is refused too.
	tx, err := e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 1")
	s.wantGuard(t, err, "DELETE after SELECT … FOR UPDATE")
	tx.Rollback()

	// A write rolled back to a savepoint does not count.
	tx, err = e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"SAVEPOINT a", "UPDATE accounts SET version = version + 1, fence_token = 9 WHERE id = 1", "ROLLBACK TO SAVEPOINT a"} {
		if _, err := tx.ExecContext(e.ctx, st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	_, err = tx.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 1")
	s.wantGuard(t, err, "DELETE after a rolled-back write")
	tx.Rollback()

	// The wrapper's DELETE: outside a transaction, inside one, inside a savepoint
	// (the fencing UPDATE then runs in a subtransaction), and fenced.
	if _, err := e.db.ExecContext(tok(e.ctx, 6), e.q("DELETE FROM accounts WHERE id = ?"), 1); err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	ftx, err := e.db.BeginTx(tok(e.ctx, 6), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ftx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
		t.Fatalf("fenced DELETE in a transaction: %v", err)
	}
	for _, st := range []string{"SAVEPOINT s1", "SAVEPOINT s2"} {
		if _, err := ftx.ExecContext(e.ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ftx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 3); err != nil {
		t.Fatalf("fenced DELETE inside a savepoint: %v", err)
	}
	if _, err := ftx.ExecContext(e.ctx, "RELEASE SAVEPOINT s1"); err != nil {
		t.Fatal(err)
	}
	if err := ftx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(); n != 2 {
		t.Fatalf("%d rows left, want 2", n)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 4); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 7), "DELETE FROM accounts")
	wantErr(t, err, fencedsql.ErrFenced)
	if e.count() != 2 {
		t.Fatal("a fenced DELETE removed rows")
	}

	// A plain transaction that writes a row the way the guard accepts, then deletes
	// it, passes: the guard asks for a write in the same transaction, not for a token.
	tx, err = e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, "UPDATE accounts SET version = version + 1, fence_token = 10 WHERE id = 5"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 5"); err != nil {
		t.Fatalf("DELETE after an UPDATE in the same transaction: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if e.count() != 1 {
		t.Fatal("row 5 not deleted")
	}
}
