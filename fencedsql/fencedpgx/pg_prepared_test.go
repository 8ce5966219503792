// Conformance cases on PostgreSQL: prepared statements and the statement cache across tokens.

package fencedpgx_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/jackc/pgx/v5"
)

// A statement prepared once serves transactions with different tokens (G5).
func testPrepared(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	pc, err := pgx.Connect(e.ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(e.ctx)
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := c.Prepare(e.ctx, "debit", debit)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Name != "debit" || sd.SQL != debit || len(sd.ParamOIDs) != 2 {
		t.Fatalf("description = %+v", sd)
	}
	if _, err := c.Prepare(e.ctx, "debit", debit); err != nil {
		t.Fatalf("Prepare is idempotent: %v", err)
	}
	for _, tk := range []uint64{6, 7} {
		tx, err := c.Begin(tok(e.ctx, tk))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(e.ctx, "debit", 1, 1); err != nil {
			t.Fatalf("token %d: %v", tk, err)
		}
		if err := tx.Commit(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Exec(tok(e.ctx, 6), "debit", 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = c.Exec(e.ctx, "debit", 1, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	// The caller's name is not a side door: on the raw connection it names nothing.
	if _, err := pc.Exec(e.ctx, "debit", 1, 1); err == nil {
		t.Fatal("the caller's name ran on the raw connection")
	}
	// Through a pool's transaction too, and a read prepared as written.
	tx, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(e.ctx, "d2", debit); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(e.ctx, "bal", "SELECT balance FROM accounts WHERE id = $1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, "d2", 1, 1); err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRow(e.ctx, "bal", 1).Scan(&bal); err != nil || bal != 97 {
		t.Fatalf("prepared read: %d %v", bal, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{97, 8, 4})
}

// In cache_statement mode pgx caches one prepared statement per text: the token is a
// parameter, so writes with many tokens share one entry (G5).
func testStatementCache(t *testing.T, e *pgEnv) {
	e.seed(1, 1)
	db := e.fenced(1)
	for tk := uint64(2); tk < 7; tk++ {
		if _, err := db.Exec(tok(e.ctx, tk), debit, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	err := db.QueryRow(e.ctx, "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'UPDATE accounts SET balance = balance - $1%'").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	if e.mode == "cache_statement" {
		want = 1
	}
	if n != want {
		t.Fatalf("%d prepared statements for the fenced UPDATE, want %d", n, want)
	}
}
