package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
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

func rawQuery(db *sql.DB) dialect.CatalogQuery {
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

func lint(t *testing.T, db *sql.DB, table string) []dialect.SchemaProblem {
	t.Helper()
	tn, err := dialect.ParseTableName(table)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := dialectImpl{}.LintSchema(context.Background(), rawQuery(db), dialect.LintTable{Table: tn, TokenColumn: "fence_token", VersionColumn: "version"})
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

// noLint is the SQLite dialect without its SchemaLinter (nor its other optional
// capabilities): the wrapper as it was before the lint, to show what each unsafe
// declaration lets through. A reduced dialect has a name of its own (WithDialect
// refuses one that takes the stock dialect's name and hides its capabilities).
type noLint struct{ dialect.Dialect }

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r noLint) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(noLint{}, r.Dialect)
}

func (noLint) Name() string { return "sqlite-without-lint" }
