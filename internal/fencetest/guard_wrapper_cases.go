// Guard case: the wrapper's writes pass the guard, and its fenced writes keep their errors.

package fencetest

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The wrapper's writes pass the guard; its fenced writes keep their errors.
func (s *guardSuite) testWrapperUnaffected(t *testing.T) {
	e := setup(t, s.b)
	s.install(e, "accounts")
	e.seed(5, 1, 2, 3)
	upd := e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?")
	for i, tk := range []uint64{6, 6, 7} {
		if _, err := e.db.ExecContext(tok(e.ctx, tk), upd, 1); err != nil {
			t.Fatalf("write %d (token %d): %v", i, tk, err)
		}
	}
	if r := e.row(1); r != (row{103, 7, 4}) {
		t.Fatalf("row 1 = %+v, want 103/7/4", r)
	}
	// Stale token: ErrFenced, not the guard.
	_, err := e.db.ExecContext(tok(e.ctx, 6), upd, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if s.isGuard(err) {
		t.Fatalf("fenced write reported by the guard: %v", err)
	}
	// Multi-row, the middle row newer: all or nothing (the row before it, already
	// updated when the middle one fails, is restored).
	e.seed(5, 11, 12, 13)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), upd, 12); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = 0 WHERE id >= ?"), 11)
	wantErr(t, err, fencedsql.ErrFenced)
	for _, id := range []int64{11, 13} {
		if r := e.row(id); r != (row{100, 5, 1}) {
			t.Fatalf("row %d changed by a fenced statement: %+v", id, r)
		}
	}
	// Upserts.
	up := e.q(s.b.Upsert)
	_, err = e.db.ExecContext(tok(e.ctx, 6), up, 1, 555)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 8), up, 1, 555); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	if r := e.row(1); r != (row{555, 8, 5}) {
		t.Fatalf("upserted row = %+v, want 555/8/5", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 8), up, 9, 1); err != nil {
		t.Fatalf("upsert inserting: %v", err)
	}
	// ExpectVersion.
	cur := e.row(2).version
	upd0 := e.q("UPDATE accounts SET balance = 0 WHERE id = ?")
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 8), cur+5), upd0, 2)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	if errors.Is(err, fencedsql.ErrFenced) || s.isGuard(err) {
		t.Fatalf("version conflict misreported: %v", err)
	}
	// Row 1 carries token 8: a stale token is fenced whether the version matches or not.
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 7), e.row(1).version), upd0, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 7), e.row(1).version+5), upd0, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 8), cur), upd0, 2); err != nil {
		t.Fatalf("ExpectVersion with the current version: %v", err)
	}
	if r := e.row(2); r != (row{0, 8, cur + 1}) {
		t.Fatalf("row 2 = %+v", r)
	}
	// Strict mode: an equal token is fenced.
	strict, err := sql.Open(s.b.DriverName, WithParam(WithParam(e.dsn, "fenced_tables=accounts"), "fenced_strict=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	_, err = strict.ExecContext(tok(e.ctx, 8), upd, 2)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := strict.ExecContext(tok(e.ctx, 9), upd, 2); err != nil {
		t.Fatal(err)
	}
	// DELETE.
	_, err = e.db.ExecContext(tok(e.ctx, 8), e.q("DELETE FROM accounts WHERE id = ?"), 2) // row 2 has token 9
	wantErr(t, err, fencedsql.ErrFenced)
	res, err := e.db.ExecContext(tok(e.ctx, 9), e.q("DELETE FROM accounts WHERE id = ? OR id = ?"), 2, 3)
	if err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("RowsAffected = %d, want 2", n)
	}
	if s.b.Returning {
		var bal int64
		if err := e.db.QueryRowContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ? RETURNING balance"), 1).Scan(&bal); err != nil || bal != 556 {
			t.Fatalf("UPDATE … RETURNING = %d, %v", bal, err)
		}
	}
	// Prepared statement across tokens.
	st, err := e.db.PrepareContext(e.ctx, upd)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(tok(e.ctx, 10), 1); err != nil {
		t.Fatal(err)
	}
	_, err = st.ExecContext(tok(e.ctx, 9), 1)
	wantErr(t, err, fencedsql.ErrFenced)
}
