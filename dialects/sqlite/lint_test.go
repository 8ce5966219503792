package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// lintDB opens a fresh SQLite file with modernc's own driver (no wrapper): its DSN
// and the plain *sql.DB.
func lintDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "lint.db")) + "?_pragma=busy_timeout(5000)"
	raw, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return dsn, raw
}

func rawQuery(db *sql.DB) fencedsql.CatalogQuery {
	return func(ctx context.Context, q string, args ...any) ([][]string, error) {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		var out [][]string
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return nil, err
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = v.String
			}
			out = append(out, row)
		}
		return out, rows.Err()
	}
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func lint(t *testing.T, db *sql.DB, table string) []fencedsql.SchemaProblem {
	t.Helper()
	tn, err := fencedsql.ParseTableName(table)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := dialect{}.LintSchema(context.Background(), rawQuery(db), fencedsql.LintTable{Table: tn, TokenColumn: "fence_token", VersionColumn: "version"})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// affinity agrees with SQLite's own: a column's affinity shows in the storage class
// of the text '10' and the integer 10 stored in it (INTEGER and NUMERIC store both as
// integer, TEXT both as text, BLOB keeps them, REAL stores both as real).
func TestAffinityMatchesSQLite(t *testing.T) {
	_, db := lintDB(t)
	classes := map[string]string{"integer/integer": "INT", "text/text": "TEXT", "text/integer": "BLOB", "real/real": "REAL"}
	for i, typ := range []string{"", "INT", "INTEGER", "BIGINT", "int8", "UNSIGNED BIG INT", "TINYINT", "MEDIUMINT", "NUMERIC", "DECIMAL(20,0)", "BOOLEAN", "DATETIME",
		"ANY", "TEXT", "VARCHAR(20)", "CLOB", "NCHAR(5)", "CHARINT", "BLOB", "TEXTBLOB", "BLOBTEXT", "REAL", "DOUBLE", "DOUBLE PRECISION", "FLOAT", "FLOATING POINT",
		"REALBLOB", "STRING", "BIGINTEGER", "Int", "point", "\"INT\"", "'TEXT'", "INTEGER /* TEXT */", "VAR CHAR"} {
		tbl := fmt.Sprintf("aff%d", i)
		mustExec(t, db, fmt.Sprintf("CREATE TABLE %s (c %s)", tbl, typ), "INSERT INTO "+tbl+" VALUES ('10'), (10)")
		var declared string
		if err := db.QueryRow("SELECT type FROM pragma_table_info(?)", tbl).Scan(&declared); err != nil {
			t.Fatal(err)
		}
		var a, b string
		if err := db.QueryRow("SELECT (SELECT typeof(c) FROM "+tbl+" WHERE rowid = 1), (SELECT typeof(c) FROM "+tbl+" WHERE rowid = 2)").Scan(&a, &b); err != nil {
			t.Fatal(err)
		}
		want := classes[a+"/"+b]
		got := affinity(declared)
		if got == "INTEGER" || got == "NUMERIC" {
			got = "INT"
		}
		if got != want {
			t.Errorf("type %q (declared %q): affinity %q, SQLite stores '10', 10 as %s, %s (%s)", typ, declared, affinity(declared), a, b, want)
		}
	}
}

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

// The type rules: INTEGER and NUMERIC affinity pass, TEXT, REAL, BLOB and no type do
// not; in a STRICT table INT and INTEGER pass and ANY does not.
func TestLintAffinity(t *testing.T) {
	_, db := lintDB(t)
	for _, c := range []struct {
		typ, opts string
		bad       bool
	}{
		{"BIGINT", "", false}, {"INTEGER", "", false}, {"NUMERIC", "", false}, {"DECIMAL(20)", "", false}, {"ANY", "", false},
		{"TEXT", "", true}, {"VARCHAR(20)", "", true}, {"REAL", "", true}, {"DOUBLE", "", true}, {"BLOB", "", true}, {"", "", true},
		{"INTEGER", " STRICT", false}, {"INT", " STRICT", false}, {"ANY", " STRICT", true}, {"TEXT", " STRICT", true}, {"REAL", " STRICT", true},
	} {
		for _, col := range []string{"fence_token", "version"} {
			other := map[string]string{"fence_token": "version", "version": "fence_token"}[col]
			ddl := fmt.Sprintf("CREATE TABLE t (id INTEGER PRIMARY KEY, %s %s NOT NULL DEFAULT 0, %s INTEGER NOT NULL DEFAULT 0)%s", col, c.typ, other, c.opts)
			mustExec(t, db, "DROP TABLE IF EXISTS t", ddl)
			ps := lint(t, db, "t")
			if c.bad != (len(ps) == 1) || len(ps) > 1 {
				t.Errorf("%s: problems %q, want bad=%v", ddl, ps, c.bad)
				continue
			}
			if c.bad && (!strings.Contains(ps[0].Problem, "column "+col+" is declared") || !strings.Contains(ps[0].Problem, "rebuild t with "+col+" BIGINT NOT NULL")) {
				t.Errorf("%s: problem %q", ddl, ps[0].Problem)
			}
		}
	}
}

// Unqualified names resolve as in a statement (temp, main, attached); qualified ones
// in their schema; a view or a missing table is a problem (the lazy check only lints a
// table whose columns it found).
func TestLintResolution(t *testing.T) {
	dsn, db := lintDB(t)
	db.SetMaxOpenConns(1) // temp tables and ATTACH are per connection
	aux := strings.Replace(strings.TrimPrefix(dsn, "file:"), "lint.db", "aux.db", 1)
	aux = aux[:strings.Index(aux, "?")]
	good := "(id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	bad := "(id INTEGER PRIMARY KEY ON CONFLICT REPLACE, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	mustExec(t, db, "ATTACH DATABASE '"+aux+"' AS aux",
		"CREATE TABLE aux.only_aux "+bad, "CREATE TABLE main.both "+good, "CREATE TABLE aux.both "+bad,
		"CREATE TEMP TABLE shadow "+bad, "CREATE TABLE main.shadow "+good, "CREATE VIEW v AS SELECT * FROM both")
	for table, wantBad := range map[string]bool{
		"only_aux": true, "ONLY_AUX": true, "both": false, "aux.both": true, "main.both": false,
		"shadow": true, "main.shadow": false, "temp.shadow": true, "v": true, "nosuch": true,
	} {
		if ps := lint(t, db, table); (len(ps) > 0) != wantBad {
			t.Errorf("%s: %q, want bad=%v", table, ps, wantBad)
		}
	}
}

// noLint is the SQLite dialect without its SchemaLinter: the wrapper as it was before
// the lint, to show what each unsafe declaration lets through.
type noLint struct{ fencedsql.Dialect }

// unsafeCase is one declaration that defeats the fence: seed rows (raw), the stale
// write that proves it (through the wrapper without the lint: it changes data wrongly
// or looks done), and the clause the refusal must name.
type unsafeCase struct {
	name, ddl string
	seed      []string
	stale     func(ctx context.Context, db *sql.DB) error // token 5 (the rows hold 10)
	wrong     func(t *testing.T, err error, rows string)  // the wrong outcome without the lint
	clause    string
}

func staleExec(q string) func(ctx context.Context, db *sql.DB) error {
	return func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), q)
		return err
	}
}

const fenceCols = "fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"

var unsafeCases = []unsafeCase{
	{name: "pk replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY ON CONFLICT REPLACE, v TEXT, " + fenceCols + ")",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: staleExec("INSERT INTO t (id, v) VALUES (1, 'stale')"), clause: "PRIMARY KEY ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|5|1" {
				t.Errorf("stale INSERT: %v, rows %s: want the newer row replaced", err, rows)
			}
		}},
	{name: "unique replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, mail TEXT UNIQUE ON CONFLICT REPLACE, " + fenceCols + ")",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 'a@x', 10, 3)"},
		stale: staleExec("INSERT INTO t (id, v, mail) VALUES (2, 'stale', 'a@x')"), clause: "UNIQUE ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "2|stale|a@x|5|1" {
				t.Errorf("stale INSERT: %v, rows %s: want the newer row deleted", err, rows)
			}
		}},
	{name: "table unique ignore", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, mail TEXT, " + fenceCols + ", CONSTRAINT one_mail UNIQUE (mail) ON CONFLICT IGNORE)",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 'a@x', 10, 3)"},
		stale: staleExec("INSERT INTO t (id, v, mail) VALUES (2, 'stale', 'a@x'), (3, 'stale', 'b@x')"), clause: "UNIQUE (mail) ON CONFLICT IGNORE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|new|a@x|10|3;3|stale|b@x|5|1" {
				t.Errorf("INSERT: %v, rows %s: want success with one row skipped", err, rows)
			}
		}},
	{name: "table pk ignore", ddl: "CREATE TABLE t (a INT, b INT, v TEXT, " + fenceCols + ", PRIMARY KEY (a, b) ON CONFLICT IGNORE) WITHOUT ROWID",
		seed:  []string{"INSERT INTO t VALUES (1, 1, 'new', 10, 3)"},
		stale: staleExec("INSERT INTO t (a, b, v) VALUES (1, 1, 'stale')"), clause: "PRIMARY KEY (a, b) ON CONFLICT IGNORE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|1|new|10|3" {
				t.Errorf("INSERT: %v, rows %s: want success with nothing written", err, rows)
			}
		}},
	{name: "token not null replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL ON CONFLICT REPLACE DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: staleExec("UPDATE t SET v = 'stale' WHERE id = 1"), clause: "NOT NULL ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|0|4" {
				t.Errorf("stale UPDATE: %v, rows %s: want it accepted and the token reset to 0", err, rows)
			}
		}},
	{name: "token not null ignore", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, \"FENCE_TOKEN\" BIGINT CONSTRAINT tok NOT NULL ON CONFLICT IGNORE DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:  []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: staleExec("UPDATE t SET v = 'stale' WHERE id = 1"), clause: "NOT NULL ON CONFLICT IGNORE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|new|10|3" {
				t.Errorf("stale UPDATE: %v, rows %s: want success with nothing written (no ErrFenced)", err, rows)
			}
		}},
	{name: "token not null fail", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL ON CONFLICT FAIL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed:  []string{"INSERT INTO t VALUES (1, 'old', 1, 3), (2, 'new', 10, 3)"},
		stale: staleExec("UPDATE t SET v = 'stale'"), clause: "NOT NULL ON CONFLICT FAIL",
		wrong: func(t *testing.T, err error, rows string) {
			if !errors.Is(err, fencedsql.ErrFenced) || rows != "1|stale|5|4;2|new|10|3" {
				t.Errorf("stale UPDATE: %v, rows %s: want ErrFenced with the first row changed", err, rows)
			}
		}},
	{name: "version not null replace", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL ON CONFLICT REPLACE DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(fencedsql.ExpectVersion(fencedsql.WithToken(ctx, 10), 2), "UPDATE t SET v = 'stale' WHERE id = 1")
			return err
		}, clause: "NOT NULL ON CONFLICT REPLACE",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|10|0" {
				t.Errorf("UPDATE expecting version 2: %v, rows %s: want it accepted and the version reset", err, rows)
			}
		}},
	{name: "text token", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token TEXT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"},
		stale: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE t SET v = 'stale' WHERE id = 1")
			return err
		}, clause: "fence_token is declared TEXT (TEXT affinity)",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || rows != "1|stale|9|4" {
				t.Errorf("token 9 over 10: %v, rows %s: want it accepted ('10' <= '9')", err, rows)
			}
		}},
	{name: "real token", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token DOUBLE NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 9007199254740993, 3)"},
		stale: func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 9007199254740992), "UPDATE t SET v = 'stale' WHERE id = 1")
			return err
		}, clause: "fence_token is declared DOUBLE (REAL affinity)",
		wrong: func(t *testing.T, err error, rows string) {
			if err != nil || !strings.HasPrefix(rows, "1|stale|") {
				t.Errorf("token 2^53 over 2^53+1: %v, rows %s: want it accepted (rounded)", err, rows)
			}
		}},
	{name: "blob token", ddl: "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		seed: []string{"INSERT INTO t VALUES (1, 'new', 10, 3)"}, stale: staleExec("UPDATE t SET v = 'stale' WHERE id = 1"),
		clause: "fence_token is declared without a type (BLOB affinity)",
		// Through the wrapper a BLOB-affinity column holds integers and fences
		// correctly; it is refused for values written otherwise (see LintSchema).
		wrong: func(t *testing.T, err error, rows string) {
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale UPDATE: %v, rows %s", err, rows)
			}
		}},
}

func dump(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM t ORDER BY 1, 2")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(cols))
		for i, v := range vals {
			s[i] = v.String
		}
		out = append(out, strings.Join(s, "|"))
	}
	return strings.Join(out, ";")
}

// Each unsafe declaration first lets a stale (or silently skipped) write through the
// wrapper without the lint; through "fenced-sqlite" the first guarded write is refused
// with ErrSchema before anything is written — the stale one and a fresh one alike —
// and CheckSchema reports the same problem, naming the table, the clause and the fix.
func TestLintRefusesUnsafeDeclarations(t *testing.T) {
	ctx := context.Background()
	for _, c := range unsafeCases {
		t.Run(c.name, func(t *testing.T) {
			dsn, raw := lintDB(t)
			mustExec(t, raw, append([]string{c.ddl}, c.seed...)...)

			before := fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), dsn), fencedsql.WithDialect(noLint{Dialect}), fencedsql.Guard("t"))
			defer before.Close()
			err := c.stale(ctx, before)
			c.wrong(t, err, dump(t, raw))

			mustExec(t, raw, "DELETE FROM t")
			mustExec(t, raw, c.seed...)
			seeded := dump(t, raw)
			db, err := sql.Open(DriverName, dsn+"&fenced_tables=t")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = c.stale(ctx, db)
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("stale write through fenced-sqlite: %v, want ErrSchema", err)
			}
			for _, want := range []string{"guarded table t:", c.clause, "rebuild t "} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE t SET v = 'fresh'"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("fresh write: %v, want ErrSchema", err)
			}
			if got := dump(t, raw); got != seeded {
				t.Errorf("rows %s after the refusals, want %s", got, seeded)
			}
			reps, err := fencedsql.CheckSchema(ctx, raw, Dialect, fencedsql.GuardSpec{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(reps[0].Problems, "; ") == "" || !strings.Contains(strings.Join(reps[0].Problems, "; "), se.Problem) {
				t.Errorf("CheckSchema problems %q lack the lazy check's %q", reps[0].Problems, se.Problem)
			}
		})
	}
}

// Safe declarations still work through "fenced-sqlite": the default ABORT, explicit
// ABORT and ROLLBACK, FAIL on a UNIQUE, STRICT tables, INTEGER PRIMARY KEY, WITHOUT
// ROWID, NUMERIC affinity. A stale write fails with ErrFenced and changes nothing; a
// newer token writes.
func TestLintAcceptsSafeDeclarations(t *testing.T) {
	ctx := context.Background()
	for name, ddl := range map[string]string{
		"default abort":          "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, " + fenceCols + ")",
		"explicit abort":         "CREATE TABLE t (id INTEGER PRIMARY KEY ON CONFLICT ABORT, v TEXT UNIQUE ON CONFLICT ABORT, fence_token BIGINT NOT NULL ON CONFLICT ABORT DEFAULT 0, version BIGINT NOT NULL ON CONFLICT ABORT DEFAULT 0)",
		"rollback":               "CREATE TABLE t (id INTEGER PRIMARY KEY ON CONFLICT ROLLBACK, v TEXT, fence_token BIGINT NOT NULL ON CONFLICT ROLLBACK DEFAULT 0, version BIGINT NOT NULL ON CONFLICT ROLLBACK DEFAULT 0)",
		"unique fail":            "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, mail TEXT UNIQUE ON CONFLICT FAIL, " + fenceCols + ")",
		"other not null replace": "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL ON CONFLICT REPLACE DEFAULT 'x', " + fenceCols + ")",
		"strict":                 "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token INTEGER NOT NULL DEFAULT 0, version INT NOT NULL DEFAULT 0) STRICT",
		"without rowid":          "CREATE TABLE t (id INT, v TEXT, " + fenceCols + ", PRIMARY KEY (id)) WITHOUT ROWID",
		"strict without rowid":   "CREATE TABLE t (id INT PRIMARY KEY, v TEXT, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0) STRICT, WITHOUT ROWID",
		"numeric":                "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, fence_token NUMERIC NOT NULL DEFAULT 0, version DECIMAL(20) NOT NULL DEFAULT 0)",
		"comment tricks":         "CREATE TABLE t (id INTEGER PRIMARY KEY /* ON CONFLICT REPLACE */, v TEXT DEFAULT 'ON CONFLICT REPLACE', \"on conflict replace\" INT, " + fenceCols + ") -- ON CONFLICT IGNORE",
	} {
		t.Run(name, func(t *testing.T) {
			dsn, raw := lintDB(t)
			mustExec(t, raw, ddl, "INSERT INTO t (id, v, fence_token, version) VALUES (1, 'new', 10, 3)")
			db, err := sql.Open(DriverName, dsn+"&fenced_tables=t")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE t SET v = 'stale' WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale UPDATE: %v, want ErrFenced", err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 11), "UPDATE t SET v = 'newer' WHERE id = 1"); err != nil {
				t.Fatalf("newer UPDATE: %v", err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 12), "INSERT INTO t (id, v) VALUES (2, 'two')"); err != nil {
				t.Fatalf("INSERT: %v", err)
			}
			var v string
			var tok int64
			if err := raw.QueryRow("SELECT v, fence_token FROM t WHERE id = 1").Scan(&v, &tok); err != nil || v != "newer" || tok != 11 {
				t.Fatalf("row 1: %q %d %v", v, tok, err)
			}
			reps, err := fencedsql.CheckSchema(ctx, raw, Dialect, fencedsql.GuardSpec{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range reps[0].Problems {
				if strings.Contains(p, "ON CONFLICT") || strings.Contains(p, "affinity") || strings.Contains(p, "declared") {
					t.Errorf("CheckSchema: %q", p)
				}
			}
		})
	}
}

// A cascading foreign key whose child is a guarded table is reported by CheckSchema
// (SideDoorFinder): ON DELETE CASCADE is a problem that says to rebuild with
// RESTRICT; ON DELETE SET NULL / SET DEFAULT and ON UPDATE CASCADE / SET NULL / SET
// DEFAULT are notes because the guard refuses the cascaded UPDATE — shown here: the
// parent's write fails and the guarded rows stay.
func TestLintCascadeChildReported(t *testing.T) {
	ctx := context.Background()
	g := Dialect.(fencedsql.Guarder)
	for _, action := range []string{"ON DELETE CASCADE", "ON DELETE SET NULL", "ON DELETE SET DEFAULT", "ON UPDATE CASCADE", "ON UPDATE SET NULL", "ON UPDATE SET DEFAULT", "ON DELETE RESTRICT", "ON DELETE NO ACTION"} {
		t.Run(action, func(t *testing.T) {
			_, raw := lintDB(t)
			raw.SetMaxOpenConns(1)
			mustExec(t, raw, "PRAGMA foreign_keys = ON", "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
				"CREATE TABLE t (id INTEGER PRIMARY KEY, p INT DEFAULT 0 REFERENCES parent (id) "+action+", "+fenceCols+")",
				"INSERT INTO parent VALUES (0), (1)", "INSERT INTO t VALUES (1, 1, 10, 3)")
			mustExec(t, raw, g.GuardDDL(fencedsql.TableName{Name: "t"}, "fence_token", "version")...)
			reps, err := fencedsql.CheckSchema(ctx, raw, Dialect, fencedsql.GuardSpec{Table: "t"})
			if err != nil {
				t.Fatal(err)
			}
			r := reps[0]
			switch {
			case action == "ON DELETE CASCADE":
				if len(r.SideDoors) != 1 || r.SideDoors[0].Note || r.OK() || !strings.Contains(r.SideDoors[0].Problem, "RESTRICT") {
					t.Fatalf("report %+v", r)
				}
			case strings.Contains(action, "RESTRICT") || strings.Contains(action, "NO ACTION"):
				if len(r.SideDoors) != 0 {
					t.Fatalf("side doors %+v", r.SideDoors)
				}
			default:
				if len(r.SideDoors) != 1 || !r.SideDoors[0].Note {
					t.Fatalf("report %+v", r)
				}
				write := "DELETE FROM parent WHERE id = 1"
				if strings.HasPrefix(action, "ON UPDATE") {
					write = "UPDATE parent SET id = 7 WHERE id = 1"
				}
				if _, err := raw.Exec(write); err == nil {
					t.Fatalf("%s: the cascade changed the guarded row (%s)", write, dump(t, raw))
				}
				if got := dump(t, raw); got != "1|1|10|3" {
					t.Fatalf("rows %s", got)
				}
			}
		})
	}
}
