package mysql_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestStatementCacheServer runs the wrapper's statement cache (fencedsql.WithStatementCache)
// on the server: the rewritten UPDATE and the claimed read are prepared once per
// connection, not once per call (the server's own count of prepares), and a cached
// statement never outlives the name resolution it was prepared under — after USE, the
// same text writes the other database's table, as the raw driver's would.
func TestStatementCacheServer(t *testing.T) {
	be := fencetest.MySQL()
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var cur string
	if err := raw.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&cur); err != nil {
		t.Fatal(err)
	}
	other := cur + "_sc"
	t.Cleanup(func() { _, _ = raw.Exec("DROP DATABASE IF EXISTS " + other) })
	for _, q := range []string{"CREATE DATABASE " + other,
		"CREATE TABLE " + cur + ".accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE " + other + ".accounts LIKE " + cur + ".accounts",
		"INSERT INTO " + cur + ".accounts (id, balance) VALUES (1, 0)",
		"INSERT INTO " + other + ".accounts (id, balance) VALUES (1, 0)"} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open(be.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prepares := func() int {
		var name string
		var n int
		if err := conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Com_stmt_prepare'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	tk := uint64(10)
	const upd = "UPDATE accounts SET balance = balance + 1 WHERE id = ?"
	update := func() {
		t.Helper()
		tk++
		if _, err := conn.ExecContext(fencedsql.WithToken(ctx, tk), upd, 1); err != nil {
			t.Fatal(err)
		}
	}
	// claimed runs a claimed read of account 1 in a transaction under a new token and
	// returns its columns.
	claimed := func(sel string) []string {
		t.Helper()
		tk++
		c := fencedsql.WithToken(ctx, tk)
		tx, err := conn.BeginTx(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(c, sel, 1)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		for err == nil && rows.Next() {
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			t.Fatal(err)
		}
		return cols
	}
	claim := func() { claimed("SELECT balance FROM accounts WHERE id = ? FOR UPDATE") }
	balance := func(database string) (b, tok int64) {
		t.Helper()
		if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM "+database+".accounts WHERE id = 1").Scan(&b, &tok); err != nil {
			t.Fatal(err)
		}
		return b, tok
	}

	update()
	claim()
	before := prepares()
	for range 3 {
		update()
		claim()
	}
	if got := prepares() - before; got != 0 {
		t.Errorf("%d statements prepared again for 3 UPDATEs and 3 claims sent before on this connection, want 0", got)
	}
	if b, tok := balance(cur); b != 4 || tok != int64(tk) {
		t.Fatalf("%s.accounts: balance %d token %d, want 4 and %d", cur, b, tok, tk)
	}

	// The table changes under a cached claimed read: the next execution returns the
	// new column set, as a statement prepared afresh would.
	star := func() []string { return claimed("SELECT * FROM accounts WHERE id = ? FOR UPDATE") }
	star()
	if _, err := raw.ExecContext(ctx, "ALTER TABLE "+cur+".accounts ADD COLUMN note VARCHAR(10) NULL"); err != nil {
		t.Fatal(err)
	}
	if cols := star(); len(cols) != 5 || cols[4] != "note" {
		t.Errorf("a cached SELECT * after ALTER TABLE ADD COLUMN returned the columns %v", cols)
	}

	if _, err := conn.ExecContext(ctx, "USE "+other); err != nil {
		t.Fatal(err)
	}
	update()
	if b, tok := balance(other); b != 1 || tok != int64(tk) {
		t.Errorf("after USE %s the UPDATE wrote %s.accounts: balance %d token %d, want 1 and %d", other, other, b, tok, tk)
	}
	if b, _ := balance(cur); b != 4 {
		t.Errorf("after USE %s the UPDATE wrote %s.accounts (balance %d, want 4): a statement prepared before USE was reused", other, cur, b)
	}
	if _, err := conn.ExecContext(ctx, "USE "+cur); err != nil {
		t.Fatal(err)
	}
	update()
	if b, _ := balance(cur); b != 5 {
		t.Errorf("after USE %s: %s.accounts balance %d, want 5", cur, cur, b)
	}
}
