// Conformance cases: the token story, stale, equal and missing tokens, versions, refusals.

package fencetest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A takes token 7 and pauses; B takes 8 and commits; A's late write is refused and B's
// work survives: a write never changes a row already written with a newer token, and it
// fails with ErrFenced instead of passing for a success (docs/design.md, G1 and G2).
func testStory(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(1, 42)
	upd := e.q("UPDATE accounts SET balance = ? WHERE id = ?")

	txA, err := e.db.BeginTx(tok(e.ctx, 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	var readA int64
	if err := txA.QueryRowContext(e.ctx, e.q("SELECT balance FROM accounts WHERE id = ?"), 42).Scan(&readA); err != nil {
		t.Fatal(err)
	}
	txA.Rollback() // A pauses (its lease expires); nothing held

	txB, err := e.db.BeginTx(tok(e.ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txB.ExecContext(e.ctx, upd, readA-30, 42); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	if err := txB.Commit(); err != nil {
		t.Fatal(err)
	}

	txA2, err := e.db.BeginTx(tok(e.ctx, 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := txA2.ExecContext(e.ctx, upd, readA-10, 42)
	if res != nil {
		t.Fatalf("fenced write returned a result")
	}
	wantErr(t, err, fencedsql.ErrFenced)
	var fe *fencedsql.FencedError
	if !errors.As(err, &fe) || fe.Table != "accounts" || fe.Token != 7 {
		t.Fatalf("FencedError = %+v", fe)
	}
	if strings.Contains(err.Error(), strconv.FormatInt(readA-10, 10)) {
		t.Fatalf("error message leaks row data: %v", err)
	}
	txA2.Rollback()
	if r := e.row(42); r.balance != readA-30 || r.token != 8 {
		t.Fatalf("row after late write = %+v, want B's balance %d with token 8", r, readA-30)
	}
}

func testInsert(t *testing.T, b Backend) {
	e := setup(t, b)
	if _, err := e.db.ExecContext(tok(e.ctx, 5), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?), (?, ?)"), 1, 10, 2, 20); err != nil {
		t.Fatal(err)
	}
	for id, bal := range map[int64]int64{1: 10, 2: 20} {
		if r := e.row(id); r != (row{bal, 5, 1}) {
			t.Fatalf("row %d = %+v, want balance %d, token 5, version 1", id, r, bal)
		}
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 6), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r != (row{11, 6, 2}) {
		t.Fatalf("after UPDATE row = %+v, want token 6 version 2", r)
	}
}

// A statement over several rows where one row is newer fails whole: it does not update
// the other rows and skip the newer one (docs/design.md, G2).
func testMultiRow(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1, 2, 3)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = balance WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	res, err := e.db.ExecContext(tok(e.ctx, 7), "UPDATE accounts SET balance = balance + 1")
	wantErr(t, err, fencedsql.ErrFenced)
	if res != nil {
		t.Fatal("result returned for a fenced statement")
	}
	for _, id := range []int64{1, 3} {
		if r := e.row(id); r.balance != 100 || r.token != 5 {
			t.Fatalf("unfenced row %d was changed by a failed statement: %+v", id, r)
		}
	}
	// The same statement with the newest token applies to all rows.
	if _, err := e.db.ExecContext(tok(e.ctx, 9), "UPDATE accounts SET balance = balance + 1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2, 3} {
		if r := e.row(id); r.balance != 101 || r.token != 9 {
			t.Fatalf("row %d = %+v", id, r)
		}
	}
}

func testEqualToken(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(7, 1)
	for i := range 3 {
		if _, err := e.db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?"), 1); err != nil {
			t.Fatalf("write %d with the same token: %v", i, err)
		}
	}
	if r := e.row(1); r != (row{103, 7, 4}) {
		t.Fatalf("row = %+v, want balance 103 token 7 version 4", r)
	}
}

func testStrict(t *testing.T, b Backend) {
	e := setup(t, b, "fenced_strict=true")
	e.seed(7, 1)
	_, err := e.db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 8), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1); err != nil {
		t.Fatalf("strictly greater token refused: %v", err)
	}
	if r := e.row(1); r.balance != 1 || r.token != 8 {
		t.Fatalf("row = %+v", r)
	}
}

func testVersion(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	v := e.row(1).version
	if _, err := e.db.ExecContext(tok(e.ctx, 5), e.q("UPDATE accounts SET balance = 7 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	upd := e.q("UPDATE accounts SET balance = 0 WHERE id = ?")
	_, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 6), v), upd, 1)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	if errors.Is(err, fencedsql.ErrFenced) {
		t.Fatal("version conflict reported as fenced")
	}
	if r := e.row(1); r.balance != 7 {
		t.Fatalf("conflicting write applied: %+v", r)
	}
	// Stale token and stale version: the token wins.
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 4), v), upd, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	// Not found is not a conflict.
	res, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 6), v), upd, 999)
	if err != nil {
		t.Fatalf("missing row: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("RowsAffected = %d", n)
	}
	// The current version succeeds and advances it.
	cur := e.row(1).version
	if _, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 6), cur), upd, 1); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r.version != cur+1 || r.balance != 0 {
		t.Fatalf("row = %+v", r)
	}
}

func testNoToken(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	for _, ctx := range []context.Context{e.ctx, tok(e.ctx, 0), fencedsql.WithLease(e.ctx, nil)} {
		_, err := e.db.ExecContext(ctx, e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 1)
		wantErr(t, err, fencedsql.ErrNoToken)
	}
	_, err := e.db.ExecContext(e.ctx, e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 2, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	if r := e.row(1); r.balance != 100 || e.count() != 1 {
		t.Fatal("tokenless write changed data")
	}
	// Reads and writes to other tables need no token.
	if _, err := e.db.ExecContext(e.ctx, "CREATE TABLE other (id INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(e.ctx, "INSERT INTO other (id) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
}

func testUnsupported(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	for _, s := range []string{
		"UPDATE accounts SET (balance, fence_token) = (0, 1000)",
		"INSERT INTO accounts SELECT * FROM accounts",
		"UPDATE accounts SET balance = 1; UPDATE accounts SET balance = 2",
	} {
		_, err := e.db.ExecContext(tok(e.ctx, 5), s)
		wantErr(t, err, fencedsql.ErrUnsupported)
	}
	if r := e.row(1); r != (row{100, 5, 1}) || e.count() != 1 {
		t.Fatalf("refused statements changed data: %+v", r)
	}
}

// A non-strict MySQL session turns the fencing NULL into 0, so the wrapper refuses it.
func testNonStrictMySQL(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(9, 1)
	// Proof of the danger on the raw driver: in a non-strict session the NULL is
	// stored as 0 and the stale write applies.
	conn, err := e.raw.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(e.ctx, "SET SESSION sql_mode = ''"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(e.ctx, "UPDATE accounts SET balance = 1, fence_token = CASE WHEN fence_token <= 7 THEN 7 ELSE NULL END WHERE id = 1"); err != nil {
		t.Fatalf("non-strict raw update: %v", err)
	}
	if r := e.row(1); r.token != 0 || r.balance != 1 {
		t.Fatalf("expected MySQL to store 0 in a non-strict session, row = %+v", r)
	}

	fconn, err := e.db.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fconn.Close()
	if _, err := fconn.ExecContext(e.ctx, "SET SESSION sql_mode = ''"); err != nil {
		t.Fatal(err)
	}
	_, err = fconn.ExecContext(tok(e.ctx, 7), "UPDATE accounts SET balance = 2 WHERE id = 1")
	wantErr(t, err, fencedsql.ErrSchema)
	if r := e.row(1); r.balance != 1 {
		t.Fatalf("write in a non-strict session applied: %+v", r)
	}
}
