package plan

import (
	"strings"
	"testing"
)

// guardCols guards accounts with the fencing columns tok and ver as configured.
func guardCols(tok, ver string) testOption {
	return func(c *PlannerConfig) {
		c.Tables = append(c.Tables, TableSpec{Name: "accounts", TokenColumn: tok, VersionColumn: ver})
	}
}

// A column name the statement writes names a fencing column only as the server
// resolves it (isFenceColumn; red-team rt34c F2): on PostgreSQL a quoted "Version" or
// "FENCE_TOKEN" is a column of its own, kept in the statement, and an unquoted name
// folds to lower case, so it is not a quoted mixed-case fencing column; on SQLite and
// MySQL/MariaDB column names compare ignoring case, quoted or not. Kept: the item is
// in the rewritten text; dropped: it is not (the wrapper's own assignment replaces it).
func TestFenceColumnMatchedAsTheServerResolvesIt(t *testing.T) {
	def := guardCols("fence_token", "version")
	custom := guardCols("FenceTok", "Ver")
	cases := []struct {
		d     testDialect
		guard testOption
		q     string
		item  string // the caller's item
		kept  bool
	}{
		// PostgreSQL, default columns.
		{pgTest, def, `UPDATE accounts SET "Version" = 1 WHERE id = 1`, `"Version" = 1`, true},
		{pgTest, def, `UPDATE accounts SET "FENCE_TOKEN" = 7, balance = 1 WHERE id = 1`, `"FENCE_TOKEN" = 7`, true},
		{pgTest, def, `UPDATE accounts SET "version" = 1 WHERE id = 1`, `"version" = 1`, false},
		{pgTest, def, `UPDATE accounts SET VERSION = 1 WHERE id = 1`, `VERSION = 1`, false},
		{pgTest, def, `UPDATE accounts SET accounts."Version" = 1 WHERE id = 1`, `accounts."Version" = 1`, true},
		{pgTest, def, `INSERT INTO accounts (id, "Version") VALUES (1, 77)`, `77`, true},
		{pgTest, def, `INSERT INTO accounts (id, version) VALUES (1, 77)`, `77`, false},
		{pgTest, def, `INSERT INTO accounts (id, balance) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET "FENCE_TOKEN" = 8`, `"FENCE_TOKEN" = 8`, true},
		{pgTest, def, `INSERT INTO accounts (id, balance) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET balance = 1, "fence_token" = 8`, `"fence_token" = 8`, false},
		// PostgreSQL, quoted mixed-case custom columns: the unquoted twin folds to fencetok.
		{pgTest, custom, `UPDATE accounts SET fencetok = 7, balance = 0 WHERE id = 1`, `fencetok = 7`, true},
		{pgTest, custom, `UPDATE accounts SET FenceTok = 7, balance = 0 WHERE id = 1`, `FenceTok = 7`, true},
		{pgTest, custom, `UPDATE accounts SET "FenceTok" = 7, balance = 0 WHERE id = 1`, `"FenceTok" = 7`, false},
		{pgTest, custom, `INSERT INTO accounts (id, balance) VALUES (1, 5) ON CONFLICT (id) DO UPDATE SET balance = 5, fencetok = 7`, `fencetok = 7`, true},
		// SQLite and MySQL/MariaDB: case-insensitive, quoted or not.
		{sqliteTest, def, `UPDATE accounts SET "VERSION" = 1, balance = 0 WHERE id = 1`, `"VERSION" = 1`, false},
		{sqliteTest, def, `UPDATE accounts SET [Fence_Token] = 1, balance = 0 WHERE id = 1`, `[Fence_Token] = 1`, false},
		{mysqlTest, def, "UPDATE accounts SET `VERSION` = 1, balance = 0 WHERE id = 1", "`VERSION` = 1", false},
		{mysqlTest, def, "UPDATE accounts SET FENCE_TOKEN = 1, balance = 0 WHERE id = 1", "FENCE_TOKEN = 1", false},
		// MySQL/MariaDB lower every character (sqllex.SameName; the server's
		// utf8mb3 column names): U+212A K is k, so fence_toKen is the token column;
		// U+017F ſ is not s (strings.EqualFold would equate them, rt36a F8), so
		// verſion is a column of its own and keeps its assignment.
		{mysqlTest, def, "UPDATE accounts SET `fence_to\u212aen` = 1, balance = 0 WHERE id = 1", "`fence_to\u212aen` = 1", false},
		{mysqlTest, def, "UPDATE accounts SET `ver\u017fion` = 1, balance = 0 WHERE id = 1", "`ver\u017fion` = 1", true},
		{mysqlTest, def, "INSERT INTO accounts (id, `ver\u017fion`) VALUES (1, 77)", "77", true},
		{mysqlTest, guardCols("fence_token", "v\u00e9r"), "UPDATE accounts SET `V\u00c9R` = 1, balance = 0 WHERE id = 1", "`V\u00c9R` = 1", false},
		// SQLite folds ASCII letters only: \u00c9 is not \u00e9, K is not k.
		{sqliteTest, def, "UPDATE accounts SET \"fence_to\u212aen\" = 1, balance = 0 WHERE id = 1", "\"fence_to\u212aen\" = 1", true},
		{sqliteTest, guardCols("fence_token", "v\u00e9r"), "UPDATE accounts SET \"V\u00c9R\" = 1, balance = 0 WHERE id = 1", "\"V\u00c9R\" = 1", true},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, c.guard)
		p, err := rw.Rewrite(c.q, false)
		if err != nil {
			t.Errorf("%s: %s: %v", c.d.name, c.q, err)
			continue
		}
		if p.Kind == KindPass {
			t.Errorf("%s: %s: passed unfenced", c.d.name, c.q)
			continue
		}
		if got := strings.Contains(p.SQL, c.item); got != c.kept {
			t.Errorf("%s: %s\n  sent: %s\n  item %s kept = %v, want %v", c.d.name, c.q, p.SQL, c.item, got, c.kept)
		}
	}
}

// Reading a column that only looks like a fencing column is no read of one: PostgreSQL's
// EXCLUDED."Version" in a conflict branch, and "Version" in a DELETE's WHERE, are
// planned as usual; EXCLUDED.version and version are refused (or mark the two-statement
// form) as before.
func TestFenceColumnReadsAsTheServerResolvesThem(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	ok := `INSERT INTO accounts (id, "Version") VALUES (1, 7) ON CONFLICT (id) DO UPDATE SET "Version" = EXCLUDED."Version"`
	if _, err := rw.Rewrite(ok, false); err != nil {
		t.Errorf("%s: %v", ok, err)
	}
	bad := `INSERT INTO accounts (id, balance) VALUES (1, 7) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED."version"`
	if _, err := rw.Rewrite(bad, false); !isRefusal(err) {
		t.Errorf("%s: %v, want a refusal", bad, err)
	}
	p, err := rw.Rewrite(`DELETE FROM accounts WHERE "Version" = 1`, false)
	if err != nil || p.TwoStepErr != nil {
		t.Errorf(`DELETE … WHERE "Version" = 1: %v, two-step %v; want planned`, err, p.TwoStepErr)
	}
	p, err = rw.Rewrite(`DELETE FROM accounts WHERE version = 1`, false)
	if err != nil || p.TwoStepErr == nil {
		t.Errorf(`DELETE … WHERE version = 1: %v, two-step %v; want the two-statement form refused`, err, p.TwoStepErr)
	}
}
