package fencetest

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// testDeleteFenceExact holds the one-statement DELETE's fence to the rows the DELETE
// deletes: a row of the table that the DELETE does not select, carrying a newer token,
// fails no DELETE — whatever the shape of the condition (plain; a subquery, which
// PostgreSQL may turn into a semi-join below which it pushes the table's own
// conditions — "o.id + 0" keeps it from deriving the row's key from the subquery's;
// EXISTS; a function call) and whatever plan the database picks
// (PostgreSQL: index scans and nested loops turned off, so the table is read whole and
// joined afterwards). The same DELETEs of the newer row fail with ErrFenced. And on
// PostgreSQL nothing deletes under the one statement's cover: neither a foreign key's
// cascade nor a function in the condition, nor user code that a plain-looking
// condition resolves to.
func (s *guardSuite) testDeleteFenceExact(t *testing.T) {
	e := s.oneStatementEnv(t)
	execAll(t, e.ctx, e.raw, []string{"CREATE TABLE other (id INT PRIMARY KEY)", "INSERT INTO other (id) VALUES (1), (2), (3), (4), (5), (6), (7), (8)"})
	if _, err := e.db.ExecContext(tok(e.ctx, 90), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 8); err != nil {
		t.Fatal(err)
	}
	conds := []string{
		"id = ?",
		"id IN (SELECT o.id + 0 FROM other o WHERE o.id = ?)",
		"EXISTS (SELECT 1 FROM other o WHERE o.id + 0 = accounts.id AND o.id = ?)",
		"id = ? AND abs(balance) >= 0",
		"id IN (SELECT o.id + 0 FROM other o WHERE o.id = ?) AND balance >= 0",
	}
	del := func(cond string, token uint64, id int64) error {
		tx, err := e.db.BeginTx(tok(e.ctx, token), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if s.b.Name == "postgres" {
			for _, set := range []string{"SET LOCAL enable_indexscan = off", "SET LOCAL enable_bitmapscan = off", "SET LOCAL enable_nestloop = off", "SET LOCAL jit = off"} {
				if _, err := tx.ExecContext(e.ctx, set); err != nil {
					return err
				}
			}
		}
		res, err := tx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE "+cond), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s: RowsAffected = %d, want 1", cond, n)
		}
		return tx.Commit()
	}
	for i, cond := range conds {
		if err := del(cond, 50, int64(i+1)); err != nil {
			t.Fatalf("DELETE … WHERE %s of a row of an older token, beside a row of a newer one: %v", cond, err)
		}
		wantErr(t, del(cond, 50, 8), fencedsql.ErrFenced)
	}
	if n := e.count(); n != 8-len(conds) {
		t.Fatalf("%d rows left, want %d", n, 8-len(conds))
	}
	if s.b.Name != "postgres" {
		return
	}
	// Nothing else deletes under the one statement's cover (PostgreSQL's row guard
	// accepts the rows its mark covers). A guarded child table whose rows a foreign
	// key's ON DELETE CASCADE deletes: the cascade is refused (the child's rows were
	// not fenced), nothing is deleted. A function in the condition that deletes the
	// child's row itself: the DELETE is sent as two statements, and the guard refuses
	// the function's DELETE.
	g := s.d.(dialect.Guarder)
	execAll(t, e.ctx, e.raw, append([]string{
		"CREATE TABLE kids (id bigint PRIMARY KEY, acct bigint REFERENCES accounts (id) ON DELETE CASCADE, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE FUNCTION zap_kid(k bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN DELETE FROM kids WHERE id = k; RETURN true; END $$",
	}, g.GuardDDL(dialect.TableName{Name: "kids"}, "fence_token", "version")...))
	execAll(t, e.ctx, e.raw, []string{"INSERT INTO kids (id, acct, fence_token, version) VALUES (1, 7, 95, 1), (2, NULL, 95, 1)"})
	_, err := e.db.ExecContext(tok(e.ctx, 50), e.q("DELETE FROM accounts WHERE id = ?"), 7)
	s.wantGuard(t, err, "ON DELETE CASCADE from the one-statement DELETE")
	_, err = e.db.ExecContext(tok(e.ctx, 50), e.q("DELETE FROM accounts WHERE id = ? AND zap_kid(2)"), 6)
	s.wantGuard(t, err, "a function in the condition deleting a guarded row")
	var kids int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT count(*) FROM kids").Scan(&kids); err != nil || kids != 2 || e.count() != 8-len(conds) {
		t.Fatalf("%d kids, %d accounts left (%v): a refused DELETE deleted", kids, e.count(), err)
	}
	s.testDeleteUserCode(t, e, 8-len(conds))
}

// testDeleteUserCode: user code that a plain-looking condition resolves to — a
// function of a built-in's name with an exact signature (length(bigint), md5(bigint)),
// a user's operator of a built-in spelling (= on bigint and numeric) — runs inside
// PostgreSQL's one-statement DELETE and is sent as one statement (the planner reads
// spellings). What it deletes is judged like any deletion: a guarded row of another
// table is refused, and so is a row of the same table carrying a newer token; a row
// of the same table at or below the statement's token is the statement's to delete.
// e has the guarded tables accounts (left rows) and kids (rows 1 and 2).
func (s *guardSuite) testDeleteUserCode(t *testing.T, e *env, left int) {
	execAll(t, e.ctx, e.raw, []string{
		"CREATE FUNCTION length(k bigint) RETURNS integer LANGUAGE plpgsql AS $$ BEGIN DELETE FROM kids WHERE id = 2; RETURN 1; END $$",
		"CREATE FUNCTION zap_eq(a bigint, b numeric) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN DELETE FROM kids WHERE id = 2; RETURN a::numeric = b; END $$",
		"CREATE OPERATOR = (LEFTARG = bigint, RIGHTARG = numeric, FUNCTION = zap_eq)",
		"CREATE FUNCTION md5(k bigint) RETURNS text LANGUAGE plpgsql AS $$ BEGIN DELETE FROM accounts WHERE id = k; RETURN 'x'; END $$",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (20, 0, 10, 1), (21, 0, 10, 1), (22, 0, 99, 1)",
	})
	left += 3
	for _, c := range []struct{ what, cond string }{
		{"a function of a built-in's name deleting another guarded table's row", "id = ? AND length(id) = 1"},
		{"a user's operator deleting another guarded table's row", "id = ?::numeric"},
		{"a function of a built-in's name deleting a row of a newer token", "id = ? AND md5(22::bigint) <> ''"},
	} {
		_, err := e.db.ExecContext(tok(e.ctx, 50), e.q("DELETE FROM accounts WHERE "+c.cond), 20)
		s.wantGuard(t, err, c.what)
	}
	var kids int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT count(*) FROM kids").Scan(&kids); err != nil || kids != 2 || e.count() != left {
		t.Fatalf("%d kids, %d accounts left, want 2, %d (%v): a refused DELETE deleted", kids, e.count(), left, err)
	}
	res, err := e.db.ExecContext(tok(e.ctx, 50), e.q("DELETE FROM accounts WHERE id = ? AND md5(21::bigint) <> ''"), 20)
	if err != nil {
		t.Fatalf("user code deleting a row of an older token, same table: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 1 || e.count() != left-2 {
		t.Fatalf("RowsAffected = %d, %d accounts left; want 1, %d", n, e.count(), left-2)
	}
	left -= 2
	// Under a token below the floor nothing is deleted, not even by user code when the
	// caller's condition selects no row (the fence never runs on a row: the mark checks
	// the floor before the scan).
	execAll(t, e.ctx, e.raw, []string{"INSERT INTO accounts (id, balance, fence_token, version) VALUES (23, 0, 10, 1), (24, 0, 10, 1)"})
	left += 2
	if err := schema.RaiseTokenFloor(e.ctx, e.raw, s.d, 60); err != nil {
		t.Fatal(err)
	}
	for _, cond := range []string{"id = ? AND md5(24::bigint) <> ''", "id = ? AND md5(24::bigint) = ''"} {
		_, err = e.db.ExecContext(tok(e.ctx, 50), e.q("DELETE FROM accounts WHERE "+cond), 23)
		wantErr(t, err, fencedsql.ErrBelowFloor)
	}
	if e.count() != left {
		t.Fatalf("%d accounts left, want %d: a DELETE under a token below the floor deleted", e.count(), left)
	}
}
