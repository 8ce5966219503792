package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// expectLint adds to mock the catalog queries of d's SchemaLinter, if any, answered
// as for a fit table, then the queries of its TriggerDoorFinder, if any, answered
// "none", in the order the lazy check sends them (after the column query). The queries are recorded by running the linter over canned answers: the
// SQLite linter's conversation (the table's schema and STRICT flag, then its CREATE
// TABLE text), which is the only one this module has.
func expectLint(t *testing.T, mock sqlmock.Sqlmock, d dialect.Dialect, table string, cols ...string) {
	t.Helper()
	tn, err := dialect.ParseTableName(table)
	if err != nil {
		t.Fatal(err)
	}
	tok, ver := "fence_token", "version"
	if len(cols) == 2 {
		tok, ver = cols[0], cols[1]
	}
	if l, ok := d.(dialect.SchemaLinter); ok {
		expectLinter(t, mock, l, tn, tok, ver)
	}
	if f, ok := d.(dialect.TriggerDoorFinder); ok {
		none := func(ctx context.Context, q string, args ...any) ([][]string, error) {
			dargs := make([]driver.Value, len(args))
			for i, v := range args {
				dargs[i] = v
			}
			if strings.Contains(q, trustQueryMark) {
				// PostgreSQL's catalog trust (its first door finder): pg_catalog first
				// and unshadowed, a UTF8 client.
				mock.ExpectQuery(q).WithArgs(dargs...).WillReturnRows(sqlmock.NewRows([]string{"trust", "enc"}).AddRow("t t", "UTF8"))
				return [][]string{{"t t", "UTF8"}}, nil
			}
			mock.ExpectQuery(q).WithArgs(dargs...).WillReturnRows(sqlmock.NewRows([]string{"c0"}))
			return nil, nil
		}
		if _, err := f.TriggerDoors(context.Background(), none, dialect.SideDoorTable{Table: tn, TokenColumn: tok, VersionColumn: ver}); err != nil {
			t.Fatalf("expectLint: trigger doors: %v", err)
		}
	}
	// The table's ancestors (relatives.go, checkAncestors): none.
	if f, ok := d.(dialect.AncestorFinder); ok {
		q, args := f.AncestorsQuery(tn)
		dargs := make([]driver.Value, len(args))
		for i, v := range args {
			dargs[i] = v
		}
		mock.ExpectQuery(q).WithArgs(dargs...).WillReturnRows(sqlmock.NewRows([]string{"schema", "name"}))
	}
}

// trustQueryMark is in the query of PostgreSQL's catalog trust, which reads the
// session's client encoding beside its path verdict.
const trustQueryMark = "pg_catalog.current_setting('client_encoding')"

// expectLinter records the conversation of l over the canned answers of a fit table.
func expectLinter(t *testing.T, mock sqlmock.Sqlmock, l dialect.SchemaLinter, tn dialect.TableName, tok, ver string) {
	t.Helper()
	// Canned answers of a fit table, by the query's dialect: SQLite's declaration,
	// MySQL's engines (the guarded table's; its tombstone table and the token floor
	// have the same rule) and column types, PostgreSQL's column types (and no
	// UNLOGGED relation).
	answer := func(q string) [][]string {
		switch {
		case strings.Contains(q, "sqlite_master") || strings.Contains(q, "sqlite_schema") || strings.Contains(q, "pragma"):
			return nil
		case strings.Contains(q, "information_schema.ENGINES"):
			return [][]string{{tn.Name, "InnoDB", "YES"}}
		case strings.Contains(q, "information_schema.COLUMNS"):
			return [][]string{{tok, "bigint", "bigint"}, {ver, "bigint", "bigint"}}
		case strings.Contains(q, "attnotnull"):
			return [][]string{} // no row: no descendant with a nullable fencing column
		case strings.Contains(q, "relpersistence"):
			return [][]string{} // no row: nothing UNLOGGED
		case strings.Contains(q, "pg_catalog.substring(p.prosrc"):
			return [][]string{{"public"}} // the schema the guard names the floor with
		case strings.Contains(q, "indimmediate"):
			return [][]string{{"1", "", "", ""}} // the key makes an INSERT wait for a DELETE
		case strings.Contains(q, "pg_catalog.pg_attribute"):
			return [][]string{{tok, "bigint", "1", "8"}, {ver, "bigint", "1", "8"}}
		case strings.Contains(q, "pg_catalog.pg_constraint"), strings.Contains(q, "information_schema.STATISTICS"):
			return [][]string{} // no row: a key that is neither deferrable nor a prefix
		}
		t.Fatalf("expectLint: unexpected query %q", q)
		return nil
	}
	sqliteAnswers := [][]string{{"main", "0"}, {"sql", "CREATE TABLE " + tn.Name + " (id INTEGER PRIMARY KEY)", ""}}
	n := 0
	record := func(ctx context.Context, q string, args ...any) ([][]string, error) {
		rows := answer(q)
		if rows != nil && len(rows) == 0 {
			dargs := make([]driver.Value, len(args))
			for i, v := range args {
				dargs[i] = v
			}
			mock.ExpectQuery(q).WithArgs(dargs...).WillReturnRows(sqlmock.NewRows([]string{"c0"}))
			return nil, nil
		}
		if rows == nil {
			if n >= len(sqliteAnswers) {
				t.Fatalf("expectLint: unexpected query %q", q)
			}
			rows = [][]string{sqliteAnswers[n]}
			n++
		}
		cols := make([]string, len(rows[0]))
		for i := range cols {
			cols[i] = "c" + string(rune('0'+i))
		}
		mrows := sqlmock.NewRows(cols)
		for _, a := range rows {
			vals := make([]driver.Value, len(a))
			for i := range a {
				vals[i] = a[i]
			}
			mrows.AddRow(vals...)
		}
		dargs := make([]driver.Value, len(args))
		for i, v := range args {
			dargs[i] = v
		}
		mock.ExpectQuery(q).WithArgs(dargs...).WillReturnRows(mrows)
		return rows, nil
	}
	ps, err := l.LintSchema(context.Background(), record, dialect.LintTable{Table: tn, TokenColumn: tok, VersionColumn: ver})
	if err != nil || len(ps) != 0 {
		t.Fatalf("expectLint: the canned fit table got %q, %v", ps, err)
	}
}

// fakeLinter is SQLite with a SchemaLinter that reports problems (or fails) on
// demand, to test the hook itself: one verdict for the lazy check and schema.Check.
type fakeLinter struct {
	dialect.Dialect
	dialect.Guarder
	dialect.Tombstoner
	problems []dialect.SchemaProblem
	err      error
	calls    *int
}

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r fakeLinter) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(fakeLinter{}, r.Dialect)
}

// Name is its own: under SQLite's it would be refused for the capabilities it does
// not forward (WithDialect, red-team rt44b F2).
func (fakeLinter) Name() string { return "sqlite-linted" }

func (f fakeLinter) LintSchema(ctx context.Context, q dialect.CatalogQuery, t dialect.LintTable) ([]dialect.SchemaProblem, error) {
	*f.calls++
	if t.Table.Name != "acc" || t.TokenColumn != "tok" || t.VersionColumn != "ver" {
		return nil, errors.New("wrong LintTable")
	}
	if _, err := q(ctx, "SELECT 1"); err != nil {
		return nil, err
	}
	return f.problems, f.err
}

// The SchemaLinter hook: the lazy check refuses the first guarded write with the
// linter's problems and fixes (ErrSchema, nothing written), exactly as schema.Check
// reports them after the columns' and before the guard's; a fit answer is cached per
// table like the column check; a failing lint query is a SchemaError wrapping it (lazy)
// or schema.Check's error (not ErrSchema).
func TestSchemaLinterHook(t *testing.T) {
	ctx := context.Background()
	path := filepath.ToSlash(filepath.Join(t.TempDir(), "lint.db"))
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TABLE acc (id INTEGER PRIMARY KEY, x INT, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	spec := schema.GuardSpec{Table: "acc", TokenColumn: "tok", VersionColumn: "ver"}
	open := func(d dialect.Dialect) *sql.DB {
		return fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), "file:"+path), fencedsql.WithDialect(d),
			fencedsql.Guard("acc", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	}
	base := func() fakeLinter {
		return fakeLinter{Dialect: sqlite.Dialect, Guarder: sqlite.Dialect.(dialect.Guarder), Tombstoner: sqlite.Dialect.(dialect.Tombstoner), calls: new(int)}
	}

	bad := base()
	bad.problems = []dialect.SchemaProblem{{Problem: "first"}, {Problem: "second", Fix: []string{"FIX 1", "FIX 2"}}}
	db := open(bad)
	defer db.Close()
	_, lazy := db.ExecContext(fencedsql.WithToken(ctx, 7), "INSERT INTO acc (id, x) VALUES (1, 1)")
	var se *fencedsql.SchemaError
	if !errors.As(lazy, &se) || !errors.Is(lazy, fencedsql.ErrSchema) || se.Table != "acc" || se.Problem != "first; second" || se.Fix != "FIX 1; FIX 2" {
		t.Fatalf("lazy check: %v", lazy)
	}
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM acc").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after the refusal: %d, %v", n, err)
	}
	reps, err := schema.Check(ctx, raw, bad, spec)
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0]
	if len(r.Problems) < 2 || r.Problems[0] != "first" || r.Problems[1] != "second" || len(r.Fix) < 2 || r.Fix[0] != "FIX 1" || r.Fix[1] != "FIX 2" {
		t.Fatalf("schema.Check: problems %q fix %q", r.Problems, r.Fix)
	}

	fit := base()
	db2 := open(fit)
	defer db2.Close()
	for i := range 3 {
		if _, err := db2.ExecContext(fencedsql.WithToken(ctx, 7), "UPDATE acc SET x = ?", i); err != nil {
			t.Fatal(err)
		}
	}
	if *fit.calls != 1 {
		t.Errorf("linter called %d times for three writes, want once (cached)", *fit.calls)
	}

	failing := base()
	failing.err = errors.New("catalog gone")
	db3 := open(failing)
	defer db3.Close()
	_, lazy = db3.ExecContext(fencedsql.WithToken(ctx, 7), "UPDATE acc SET x = 1")
	if !errors.Is(lazy, fencedsql.ErrSchema) || !strings.Contains(lazy.Error(), "catalog gone") || !strings.Contains(lazy.Error(), "lint") {
		t.Errorf("lazy check with a failing lint: %v", lazy)
	}
	if _, err := schema.Check(ctx, raw, failing, spec); err == nil || errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "catalog gone") {
		t.Errorf("schema.Check with a failing lint: %v", err)
	}

	// WithSchemaCheck(false): no lint.
	off := base()
	off.problems = bad.problems
	db4 := fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), "file:"+path), fencedsql.WithDialect(off), fencedsql.WithSchemaCheck(false),
		fencedsql.Guard("acc", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer db4.Close()
	if _, err := db4.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE acc SET x = 1"); err != nil || *off.calls != 0 {
		t.Errorf("WithSchemaCheck(false): %v, %d lint calls", err, *off.calls)
	}
}
