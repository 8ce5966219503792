// Conformance cases per statement kind: DELETE, upsert, mapped columns, duplicates, RETURNING, sqlx, schema.

package fencetest

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/jmoiron/sqlx"
)

func testDelete(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1, 2, 3)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.ExecContext(tok(e.ctx, 7), e.q("DELETE FROM accounts WHERE id = ? OR id = ?"), 1, 2)
	wantErr(t, err, fencedsql.ErrFenced)
	if n := e.count(); n != 3 {
		t.Fatalf("fenced DELETE removed rows: %d left", n)
	}
	if r := e.row(1); r.token != 5 {
		t.Fatalf("fenced DELETE changed row 1: %+v", r)
	}
	res, err := e.db.ExecContext(tok(e.ctx, 9), e.q("DELETE FROM accounts WHERE id = ? OR id = ?"), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("RowsAffected = %d, want 2", n)
	}
	// Inside a caller's transaction too.
	tx, _ := e.db.BeginTx(tok(e.ctx, 8), nil)
	_, err = tx.ExecContext(e.ctx, "DELETE FROM accounts")
	if err != nil {
		t.Fatalf("DELETE of a row with an older token: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d rows left", n)
	}
}

func testUpsert(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(8, 1)
	up := e.q(b.Upsert)
	_, err := e.db.ExecContext(tok(e.ctx, 7), up, 1, 555)
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 100 || r.token != 8 {
		t.Fatalf("fenced upsert changed the row: %+v", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 9), up, 1, 555); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r != (row{555, 9, 2}) {
		t.Fatalf("upsert row = %+v, want 555/9/2", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 3), up, 2, 1); err != nil {
		t.Fatalf("upsert inserting a new row: %v", err)
	}
	if r := e.row(2); r != (row{1, 3, 1}) {
		t.Fatalf("inserted row = %+v", r)
	}
}

// A statement that assigns the fencing columns itself (an ORM model that maps them) is
// fenced with the wrapper's own values in their place: the caller can neither lower the
// token nor choose the version.
func testMappedColumnsReplaced(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	if _, err := e.db.ExecContext(tok(e.ctx, 6), "UPDATE accounts SET balance = 50, fence_token = 1, version = 999 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r != (row{50, 6, 2}) {
		t.Fatalf("after a mapped UPDATE with token 6: %+v, want balance 50, token 6, version 2", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 6), "INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 7, 99999, 77)"); err != nil {
		t.Fatal(err)
	}
	if r := e.row(2); r != (row{7, 6, 1}) {
		t.Fatalf("after a mapped INSERT with token 6: %+v, want balance 7, token 6, version 1", r)
	}
	_, err := e.db.ExecContext(tok(e.ctx, 5), "UPDATE accounts SET balance = 0, fence_token = 1000 WHERE id = 1")
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r != (row{50, 6, 2}) {
		t.Fatalf("a stale mapped UPDATE changed the row: %+v", r)
	}
}

func testDuplicate(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	_, err := e.db.ExecContext(tok(e.ctx, 6), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 1, 1)
	wantErr(t, err, fencedsql.ErrDuplicate)
	var de *fencedsql.DuplicateError
	if !errors.As(err, &de) || de.Constraint == "" {
		t.Fatalf("DuplicateError = %+v, want a constraint name", de)
	}
}

func testSchema(t *testing.T, b Backend) {
	e := setup(t, b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(b.DriverName, WithParam(e.dsn, "fenced_tables=ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(tok(e.ctx, 1), e.q("INSERT INTO ledger (id, amount) VALUES (?, ?)"), 1, 1)
	wantErr(t, err, fencedsql.ErrSchema)
	if !strings.Contains(err.Error(), "ledger") || !strings.Contains(err.Error(), "ADD COLUMN") {
		t.Fatalf("schema error does not name the table and the fix: %v", err)
	}
	var n int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM ledger").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused write changed data: %d rows, %v", n, err)
	}
}

func testSqlx(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	db, err := sqlx.Open(b.DriverName, WithParam(e.dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := "UPDATE accounts SET balance = ? WHERE id = ?"
	if b.Numbered {
		want = "UPDATE accounts SET balance = $1 WHERE id = $2"
	}
	if got := db.Rebind("UPDATE accounts SET balance = ? WHERE id = ?"); got != want {
		t.Fatalf("Rebind = %q, want %q", got, want)
	}
	_, err = db.NamedExecContext(tok(e.ctx, 6), "UPDATE accounts SET balance = :balance WHERE id = :id", map[string]any{"balance": 77, "id": 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.NamedExecContext(tok(e.ctx, 5), "UPDATE accounts SET balance = :balance WHERE id = :id", map[string]any{"balance": 1, "id": 1})
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 77 || r.token != 6 {
		t.Fatalf("row = %+v", r)
	}
}

func testReturning(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	var bal int64
	err := e.db.QueryRowContext(tok(e.ctx, 6), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ? RETURNING balance"), 1).Scan(&bal)
	if err != nil || bal != 101 {
		t.Fatalf("RETURNING = %d, %v", bal, err)
	}
	err = e.db.QueryRowContext(tok(e.ctx, 5), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ? RETURNING balance"), 1).Scan(&bal)
	wantErr(t, err, fencedsql.ErrFenced)
}
