// Lint tests of ON CONFLICT clauses (per class and as SQLite resolves them).

package sqlite

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// clauseCase is one generated CREATE TABLE of the class test.
type clauseCase struct {
	name, ddl string
	bad       bool   // the linter must report a problem
	want      string // text the problem must contain
}

// clauseCases generates CREATE TABLE statements: every conflict action (and none) ×
// every place a conflict clause can stand (column PRIMARY KEY, INTEGER PRIMARY KEY
// ASC, column UNIQUE, table PRIMARY KEY and UNIQUE with and without a comma before,
// NOT NULL of the token, of the version, of another column, the no-op NULL) × a
// CONSTRAINT name or none × spelling (case, comments between the words, quoted
// column names). The verdict follows LintSchema's rules.
func clauseCases() []clauseCase {
	type place struct {
		name string
		// cols: the column definitions, with %s where the clause goes (%[1]s: the
		// constraint name prefix, %[2]s: the conflict clause); tcons: a table
		// constraint, same verbs.
		ddl     string
		kind    string // PRIMARY KEY, UNIQUE, token NOT NULL, version NOT NULL, other
		columns bool   // the table constraint
	}
	tok, ver := "fence_token BIGINT NOT NULL DEFAULT 0", "version BIGINT NOT NULL DEFAULT 0"
	places := []place{
		{"column pk", "id INTEGER %[1]sPRIMARY KEY%[2]s, v TEXT, " + tok + ", " + ver, "PRIMARY KEY", false},
		{"column pk asc", "id INTEGER %[1]sPRIMARY KEY ASC%[2]s AUTOINCREMENT, v TEXT, " + tok + ", " + ver, "PRIMARY KEY", false},
		{"text pk", "id TEXT NOT NULL %[1]sPRIMARY KEY%[2]s, v TEXT, " + tok + ", " + ver, "PRIMARY KEY", false},
		{"column unique", "id INTEGER PRIMARY KEY, v TEXT %[1]sUNIQUE%[2]s DEFAULT 'x', " + tok + ", " + ver, "UNIQUE", false},
		{"table pk", "a INT, b INT, v TEXT, " + tok + ", " + ver + ", %[1]sPRIMARY KEY (a, b)%[2]s", "PRIMARY KEY", true},
		{"table unique", "id INTEGER PRIMARY KEY, v TEXT, " + tok + ", " + ver + ", %[1]sUNIQUE (v)%[2]s", "UNIQUE", true},
		{"table unique no comma", "a INT, v TEXT, " + tok + ", " + ver + ", PRIMARY KEY (a) %[1]sUNIQUE (v COLLATE NOCASE, a)%[2]s", "UNIQUE", true},
		{"table unique after check", "id INTEGER PRIMARY KEY, v TEXT, " + tok + ", " + ver + ", CHECK (v <> 'on conflict replace') %[1]sUNIQUE (v)%[2]s", "UNIQUE", true},
		{"token not null", "id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT %[1]sNOT NULL%[2]s DEFAULT 0, " + ver, "token", false},
		{"version not null", "id INTEGER PRIMARY KEY, v TEXT, " + tok + ", version BIGINT DEFAULT 0 %[1]sNOT NULL%[2]s", "version", false},
		{"other not null", "id INTEGER PRIMARY KEY, v TEXT %[1]sNOT NULL%[2]s DEFAULT 'x', " + tok + ", " + ver, "other", false},
		{"token null no-op", "id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL %[1]sNULL%[2]s DEFAULT 0, " + ver, "other", false},
		{"fk then token", "id INTEGER PRIMARY KEY, p INT REFERENCES parent (id) ON DELETE RESTRICT ON UPDATE NO ACTION, fence_token BIGINT %[1]sNOT NULL%[2]s DEFAULT 0, " + ver, "token", false},
	}
	spellings := []struct {
		name string
		fn   func(string) string
	}{
		{"plain", func(s string) string { return s }},
		{"lower", strings.ToLower},
		{"comments", func(s string) string {
			r := strings.NewReplacer(" CONFLICT ", " /* on conflict abort */ CONFLICT -- x\n ", "NOT NULL", "NOT/**/NULL", "PRIMARY KEY", "PRIMARY\n\tKEY")
			return r.Replace(s)
		}},
		{"quoted", func(s string) string {
			r := strings.NewReplacer("fence_token BIGINT", `"Fence_Token" BIGINT`, "version BIGINT", "[VERSION] BIGINT", "v TEXT", "`v` TEXT", "(v)", `("v")`)
			return r.Replace(s)
		}},
	}
	var out []clauseCase
	for _, p := range places {
		for _, action := range []string{"", "ROLLBACK", "ABORT", "FAIL", "IGNORE", "REPLACE"} {
			for _, cname := range []string{"", "CONSTRAINT \"my c\" "} {
				for _, sp := range spellings {
					clause := ""
					if action != "" {
						clause = " ON CONFLICT " + action
					}
					body := fmt.Sprintf(p.ddl, cname, clause)
					bad := false
					switch p.kind {
					case "PRIMARY KEY", "UNIQUE":
						bad = action == "IGNORE" || action == "REPLACE"
					case "token", "version":
						bad = action == "IGNORE" || action == "REPLACE" || action == "FAIL"
					}
					want := ""
					if bad {
						want = "ON CONFLICT " + action
						if p.kind == "PRIMARY KEY" || p.kind == "UNIQUE" {
							want = "the " + p.kind
						} else {
							want = "NOT NULL"
						}
					}
					out = append(out, clauseCase{
						name: fmt.Sprintf("%s/%s/%q/%s", p.name, strings.ToLower(action), cname, sp.name),
						ddl:  sp.fn("CREATE TABLE t (" + body + ")"), bad: bad, want: want,
					})
				}
			}
		}
	}
	return out
}

// Every generated declaration gets the verdict of LintSchema's rules, on a real
// SQLite database (which also proves the statement is valid SQLite).
func TestLintConflictClausesByClass(t *testing.T) {
	db, err := sql.Open("sqlite", "file:lintclass?mode=memory")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database
	mustExec(t, db, "CREATE TABLE parent (id INTEGER PRIMARY KEY)")
	for _, c := range clauseCases() {
		mustExec(t, db, "DROP TABLE IF EXISTS t", c.ddl)
		ps := lint(t, db, "t")
		if c.bad != (len(ps) > 0) || len(ps) > 1 {
			t.Errorf("%s: %s\nproblems %q, want bad=%v", c.name, c.ddl, ps, c.bad)
			continue
		}
		if c.bad && (!strings.Contains(ps[0].Problem, c.want) || !strings.Contains(ps[0].Problem, "of t ") || !strings.Contains(ps[0].Problem, "rebuild t without that clause")) {
			t.Errorf("%s: problem %q lacks %q, the table or the fix", c.name, ps[0].Problem, c.want)
		}
	}
}

// The parser on its own: names, columns, clause text, ON DELETE is no conflict clause.
func TestConflictClauses(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want []conflictClause
	}{
		{`CREATE TABLE "a(b" (id INTEGER CONSTRAINT pk PRIMARY KEY DESC ON CONFLICT REPLACE, [x y] INT NOT NULL ON CONFLICT ignore)`, []conflictClause{
			{constraint: "PRIMARY KEY", column: "id", name: "pk", action: "REPLACE", text: "PRIMARY KEY DESC ON CONFLICT REPLACE"},
			{constraint: "NOT NULL", column: "x y", action: "IGNORE", text: "NOT NULL ON CONFLICT ignore"},
		}},
		{`CREATE TABLE t ('quoted''s' INT, p INT REFERENCES q ON DELETE CASCADE, CONSTRAINT u UNIQUE (p) ON CONFLICT FAIL) STRICT, WITHOUT ROWID`, []conflictClause{
			{constraint: "UNIQUE", name: "u", action: "FAIL", text: "UNIQUE (p) ON CONFLICT FAIL"},
		}},
		{`CREATE TABLE t (x DEFAULT (1 + 2), y CHECK (y IN (1, 2)) NOT NULL ON CONFLICT ROLLBACK)`, []conflictClause{
			{constraint: "NOT NULL", column: "y", action: "ROLLBACK", text: "NOT NULL ON CONFLICT ROLLBACK"},
		}},
		{`CREATE TABLE t AS SELECT 1 AS "x(y"`, nil},
	} {
		got, err := conflictClauses(c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.sql, got, c.want)
		}
	}
	if _, err := conflictClauses("CREATE TABLE t (x INT"); err == nil {
		t.Error("unbalanced: no error")
	}
	if _, err := conflictClauses("CREATE TABLE t (x 'INT)"); err == nil {
		t.Error("unterminated literal: no error")
	}
}
