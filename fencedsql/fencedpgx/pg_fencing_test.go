// Conformance cases on PostgreSQL: the token story, stale and missing tokens, versions, refusals.

package fencedpgx_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A takes token 7 and pauses; B takes 8 and commits; A's late write fails with
// ErrFenced and B's work survives (G1, G2).
func testStory(t *testing.T, e *pgEnv) {
	e.seed(1, 1)
	txA, err := e.db.Begin(tok(e.ctx, 7))
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(e.ctx)
	txB, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txB.Exec(e.ctx, debit, 10, 1); err != nil {
		t.Fatal(err)
	}
	if err := txB.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	// A's statement context carries no token: the transaction's binds it.
	_, err = txA.Exec(e.ctx, debit, 50, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	var fe *fencedsql.FencedError
	if !errors.As(err, &fe) || fe.Token != 7 || fe.Table != "accounts" {
		t.Fatalf("FencedError = %+v", fe)
	}
	if err := txA.Commit(e.ctx); err == nil {
		t.Fatal("commit of an aborted transaction succeeded")
	}
	wantRow(t, e.row(1), acct{90, 8, 2})
}

func testInsert(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testEqualToken(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	if _, err := e.db.Exec(tok(e.ctx, 5), debit, 1, 1); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	tag, err := e.db.Exec(tok(e.ctx, 6), debit, 1, 1)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("fresh token: %v %v", tag, err)
	}
	wantRow(t, e.row(1), acct{98, 6, 3})
}

func testStale(t *testing.T, e *pgEnv) {
	e.seed(9, 1)
	_, err := e.db.Exec(tok(e.ctx, 8), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 9, 1})
}

func testMultiRow(t *testing.T, e *pgEnv) {
	e.seed(5, 1, 2, 3)
	if _, err := e.db.Exec(tok(e.ctx, 9), debit, 1, 2); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Exec(tok(e.ctx, 7), "UPDATE accounts SET balance = 0 WHERE id IN (1, 2, 3)")
	wantErr(t, err, fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 5, 1})
	wantRow(t, e.row(2), acct{99, 9, 2})
	wantRow(t, e.row(3), acct{100, 5, 1})
}

func testNoToken(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	_, err := e.db.Exec(e.ctx, debit, 1, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	_, err = e.db.Exec(tok(e.ctx, 0), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	tx, err := e.db.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, "INSERT INTO accounts (id, balance) VALUES (2, 1)")
	wantErr(t, err, fencedsql.ErrNoToken)
	_ = tx.Rollback(e.ctx)
	wantRow(t, e.row(1), acct{100, 5, 1})
	if e.count() != 1 {
		t.Fatal("a write without a token changed the table")
	}
	// Reads need no token.
	var n int
	if err := e.db.QueryRow(e.ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil || n != 1 {
		t.Fatalf("read: %d %v", n, err)
	}
}

func testVersion(t *testing.T, e *pgEnv) {
	e.seed(5, 1) // version 1
	_, err := e.db.Exec(fencedsql.ExpectVersion(tok(e.ctx, 6), 7), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	wantRow(t, e.row(1), acct{100, 5, 1})
	if _, err := e.db.Exec(fencedsql.ExpectVersion(tok(e.ctx, 6), 1), debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{99, 6, 2})
	// DELETE with a stale version: nothing deleted.
	_, err = e.db.Exec(fencedsql.ExpectVersion(tok(e.ctx, 6), 1), "DELETE FROM accounts WHERE id = $1", 1)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	if e.count() != 1 {
		t.Fatal("row deleted")
	}
}

func testUnsupported(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	for _, q := range []string{
		"TRUNCATE accounts",
		"UPDATE accounts SET balance = 0; SELECT 1",
		"WITH d AS (DELETE FROM accounts RETURNING id) SELECT count(*) FROM d",
		"UPDATE accounts SET fence_token = 99",
		"DROP TABLE accounts",
	} {
		_, err := e.db.Exec(tok(e.ctx, 9), q)
		if q == "UPDATE accounts SET fence_token = 99" {
			// A statement that assigns the fencing column is fenced with the wrapper's
			// own assignment in its place (G4): it succeeds and records token 9.
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			continue
		}
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("%s: err = %v, want ErrUnsupported", q, err)
		}
	}
	if e.count() != 1 {
		t.Fatal("a refused statement was sent")
	}
	wantRow(t, e.row(1), acct{100, 9, 2})
}
