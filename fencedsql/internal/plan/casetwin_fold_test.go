package plan

import "testing"

// A quoted PostgreSQL schema qualifier with upper-case letters ("S".accounts) names
// another schema than s: a fenced write or claim through it is refused, whether the
// guard is qualified or not; the unquoted or lower-case spellings are the guarded
// table (or a derived guard judged on its own).
func TestCaseTwinQuotedQualifierRefused(t *testing.T) {
	for _, guard := range []string{"accounts", "s.accounts"} {
		for _, q := range []string{
			`UPDATE "S".accounts SET balance = 0 WHERE id = 1`,
			`UPDATE "S"."accounts" SET balance = 0 WHERE id = 1`,
			`INSERT INTO "Public".accounts (id) VALUES (1)`,
			`DELETE FROM "S".accounts WHERE id = 1`,
			`SELECT * FROM "S".accounts WHERE id = 1 FOR UPDATE`,
		} {
			rw := newTestRewriter(t, pgTest, Guard(guard))
			if p, err := rw.Rewrite(q, false); !isRefusal(err) {
				t.Errorf("guard %s: rewrite(%q) = %v, %v; want a refusal", guard, q, p, err)
			}
		}
		for _, q := range []string{
			`UPDATE S.accounts SET balance = 0 WHERE id = 1`,
			`UPDATE "s".accounts SET balance = 0 WHERE id = 1`,
			`SELECT * FROM "S".accounts`,
		} {
			rw := newTestRewriter(t, pgTest, Guard(guard))
			if _, err := rw.Rewrite(q, false); err != nil {
				t.Errorf("guard %s: rewrite(%q): %v", guard, q, err)
			}
		}
	}
	// The planner's guard for S.accounts (folded by the server to s) is s.accounts'.
	rw := newTestRewriter(t, pgTest, Guard("s.accounts"))
	if g := rw.Lookup([]string{"S", "accounts"}); g == nil || g.Root != nil {
		t.Errorf("Lookup(S.accounts) = %+v; want the configured s.accounts", g)
	}
}

// On MySQL/MariaDB a database qualifier keeps its spelling: `T_X`.acc and t_x.acc get
// two derived guards (two lazy checks, two verdicts), and a guard configured as
// t_x.acc matches only that spelling exactly.
func TestDatabaseQualifierKeepsSpelling(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("acc"))
	lo, up := rw.Lookup([]string{"t_x", "acc"}), rw.Lookup([]string{"T_X", "acc"})
	if lo == nil || up == nil || lo == up || lo.Schema != "t_x" || up.Schema != "T_X" {
		t.Errorf("Lookup(t_x.acc) = %+v, Lookup(T_X.acc) = %+v; want two derived guards keeping the spelling", lo, up)
	}
	rw = newTestRewriter(t, mysqlTest, Guard("t_x.acc"))
	if g := rw.Lookup([]string{"t_x", "acc"}); g == nil || g.Root != nil {
		t.Errorf("Lookup(t_x.acc) = %+v; want the configured guard", g)
	}
	if g := rw.Lookup([]string{"T_X", "acc"}); g == nil || g.Root == nil || g.Schema != "T_X" {
		t.Errorf("Lookup(T_X.acc) = %+v; want a derived guard on T_X", g)
	}
	// A guard configured with upper-case letters keeps them.
	rw = newTestRewriter(t, mysqlTest, Guard("T_X.acc"))
	if g := rw.Lookup([]string{"T_X", "acc"}); g == nil || g.Root != nil || g.Schema != "T_X" {
		t.Errorf("Lookup(T_X.acc) = %+v; want the configured guard", g)
	}
	// PostgreSQL folds the (unquoted) qualifier's ASCII letters: one derived guard.
	rw = newTestRewriter(t, pgTest, Guard("accounts"))
	if a, b := rw.Lookup([]string{"s", "accounts"}), rw.Lookup([]string{"S", "accounts"}); a != b {
		t.Errorf("PostgreSQL: Lookup(s.accounts) = %p, Lookup(S.accounts) = %p; want one derived guard", a, b)
	}
}

// PostgreSQL and SQLite fold only ASCII letters: CAFÉ is not café. The key folds as
// they do; a fenced write or claim of a non-ASCII case twin is refused; the guarded
// name in any ASCII case is the guarded table. MySQL folds every letter in its key
// and keeps the written spelling in a derived guard.
func TestNonASCIICaseTwin(t *testing.T) {
	for _, d := range []testDialect{pgTest, sqliteTest} {
		rw := newTestRewriter(t, d, Guard("café"))
		if k := rw.Key("CAFÉ"); k != "cafÉ" {
			t.Errorf("%s: Key(CAFÉ) = %q; want cafÉ", d.name, k)
		}
		for _, q := range []string{
			`UPDATE CAFÉ SET balance = 0 WHERE id = 1`,
			`UPDATE cafÉ SET balance = 0 WHERE id = 1`,
			`UPDATE "CAFÉ" SET balance = 0 WHERE id = 1`,
			`INSERT INTO CAFÉ (id) VALUES (1)`,
			`DELETE FROM main.CAFÉ WHERE id = 1`,
		} {
			if p, err := rw.Rewrite(q, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v, %v; want a refusal", d.name, q, p, err)
			}
		}
		for _, q := range []string{
			`UPDATE CAFé SET balance = 0 WHERE id = 1`,
			`UPDATE café SET balance = 0 WHERE id = 1`,
			`SELECT * FROM CAFÉ`,
		} {
			if _, err := rw.Rewrite(q, false); err != nil {
				t.Errorf("%s: rewrite(%q): %v", d.name, q, err)
			}
		}
		if p, err := rw.Rewrite(`UPDATE CAFé SET balance = 0 WHERE id = 1`, false); err != nil || p.Guard == nil || p.Guard.Root != nil {
			t.Errorf("%s: UPDATE CAFé: %+v, %v; want the configured guard", d.name, p, err)
		}
	}
	// A guard spelled with an upper-case non-ASCII letter: its lower-case spelling is
	// the twin, and the pre-filter sees both.
	rw := newTestRewriter(t, pgTest, Guard("cafÉ"))
	if p, err := rw.Rewrite(`UPDATE café SET balance = 0 WHERE id = 1`, false); !isRefusal(err) {
		t.Errorf("guard cafÉ: UPDATE café = %v, %v; want a refusal", p, err)
	}
	if p, err := rw.Rewrite(`UPDATE CAFÉ SET balance = 0 WHERE id = 1`, false); err != nil || p.Guard == nil || p.Guard.Root != nil {
		t.Errorf("guard cafÉ: UPDATE CAFÉ = %+v, %v; want the configured guard", p, err)
	}
	rw = newTestRewriter(t, mysqlTest, Guard("café"))
	if g := rw.Lookup([]string{"CAFÉ"}); g == nil || g.Name != "CAFÉ" || g.Root == nil {
		t.Errorf("MySQL: Lookup(CAFÉ) = %+v; want a derived guard keeping the spelling", g)
	}
}
