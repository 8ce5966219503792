package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// anySQL is the expectation text that matches any statement (the write after a
// passing check, the guard query); other expectations match exactly.
const anySQL = "<any>"

var verdictMatcher = sqlmock.QueryMatcherFunc(func(want, got string) error {
	if want == anySQL {
		return nil
	}
	return exactSQL.Match(want, got)
})

// col is one row of a dialect's column query.
type col struct {
	name    string
	notNull driver.Value
}

type verdictCase struct {
	name     string
	spec     schema.GuardSpec
	cols     []col // nil: no such table
	fit      bool
	problems int // schema.Check's problems about the columns (and the table)
	// foldOnly: the columns match the configured names only case-insensitively, so
	// where quoted names are exact (dialect.ExactIdenter) both are missing.
	foldOnly bool
}

func okCols(flag driver.Value) []col {
	return []col{{"id", int64(1)}, {"fence_token", flag}, {"version", flag}}
}

var verdictCases = []verdictCase{
	{name: "fit, integer flag", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols(int64(1)), fit: true},
	{name: "fit, text 1", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols("1"), fit: true},
	{name: "fit, bytes 1", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols([]byte("1")), fit: true},
	{name: "fit, bool", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols(true), fit: true},
	{name: "fit, t", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols("t"), fit: true},
	{name: "fit, TRUE", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols("TRUE"), fit: true},
	{name: "fit, padded true", spec: schema.GuardSpec{Table: "accounts"}, cols: okCols(" true "), fit: true},
	{name: "missing table", spec: schema.GuardSpec{Table: "accounts"}, problems: 1},
	{name: "missing token column", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}, {"version", int64(1)}}, problems: 1},
	{name: "missing version column", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}, {"fence_token", int64(1)}}, problems: 1},
	{name: "both columns missing", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}}, problems: 2},
	{name: "nullable token column", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}, {"fence_token", int64(0)}, {"version", int64(1)}}, problems: 1},
	{name: "nullable version column", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}, {"fence_token", "1"}, {"version", false}}, problems: 1},
	{name: "both nullable (f, NULL)", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}, {"fence_token", "f"}, {"version", nil}}, problems: 2},
	{name: "both nullable (0, false)", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"fence_token", "0"}, {"version", "false"}}, problems: 2},
	{name: "missing token, nullable version", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"id", int64(1)}, {"version", int64(0)}}, problems: 2},
	{name: "column names in another case", spec: schema.GuardSpec{Table: "accounts"},
		cols: []col{{"ID", int64(1)}, {"FENCE_TOKEN", int64(1)}, {"Version", "t"}}, fit: true, foldOnly: true},
	{name: "configured names in another case", spec: schema.GuardSpec{Table: "accounts", TokenColumn: "Fence_Token", VersionColumn: "VERSION"},
		cols: okCols(int64(1)), fit: true, foldOnly: true},
	{name: "custom columns", spec: schema.GuardSpec{Table: "accounts", TokenColumn: "tok", VersionColumn: "ver"},
		cols: []col{{"tok", int64(1)}, {"ver", int64(1)}}, fit: true},
	{name: "custom columns missing, defaults present", spec: schema.GuardSpec{Table: "accounts", TokenColumn: "tok", VersionColumn: "ver"},
		cols: okCols(int64(1)), problems: 2},
	{name: "schema-qualified", spec: schema.GuardSpec{Table: "shop.accounts"}, cols: okCols(int64(1)), fit: true},
	{name: "schema-qualified, mixed-case table, nullable token", spec: schema.GuardSpec{Table: "shop.Accounts"},
		cols: []col{{"fence_token", int64(0)}, {"version", int64(1)}}, problems: 1},
	{name: "mixed-case table, missing version", spec: schema.GuardSpec{Table: "Accounts"},
		cols: []col{{"fence_token", int64(1)}}, problems: 1},
}

func (c verdictCase) rows() *sqlmock.Rows {
	r := sqlmock.NewRows([]string{"name", "notnull"})
	for _, cl := range c.cols {
		r.AddRow(cl.name, cl.notNull)
	}
	return r
}

func (c verdictCase) guardOption() fencedsql.Option {
	var opts []fencedsql.GuardOption
	if c.spec.TokenColumn != "" {
		opts = append(opts, fencedsql.TokenColumn(c.spec.TokenColumn))
	}
	if c.spec.VersionColumn != "" {
		opts = append(opts, fencedsql.VersionColumn(c.spec.VersionColumn))
	}
	return fencedsql.Guard(c.spec.Table, opts...)
}

// lazyVerdict runs a guarded UPDATE through the fenced driver over sqlmock: the lazy
// check's answer (nil, or its *SchemaError).
func lazyVerdict(t *testing.T, d dialect.Dialect, c verdictCase) error {
	t.Helper()
	dsn := fmt.Sprintf("fencedsql-verdict-%d", mockSeq.Add(1))
	mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(verdictMatcher))
	if err != nil {
		t.Fatal(err)
	}
	defer mdb.Close()
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), fencedsql.WithDialect(d), c.guardOption())
	defer db.Close()
	// The pool's first connection: no registry; the listed table exists (or not: then
	// the pool refuses with the lazy check's own verdict).
	expectRecords(mock, d)
	expectDescendants(mock, d, tableOf(t, c.spec.Table).String())
	expectCatalogViews(mock, d)
	q, _ := d.ColumnsQuery(tableOf(t, c.spec.Table))
	mock.ExpectQuery(q).WillReturnRows(c.rows())
	if c.cols == nil {
		_, err = db.ExecContext(withTok(7), "UPDATE "+c.spec.Table+" SET x = 1")
		mockMet(t, mock)
		return err
	}
	expectSessionCheck(mock, d)
	expectNamePath(mock, d)
	mock.ExpectQuery(q).WillReturnRows(c.rows())
	if c.fit {
		tok, ver := c.spec.TokenColumn, c.spec.VersionColumn
		if tok == "" {
			tok = schema.DefaultTokenColumn
		}
		if ver == "" {
			ver = schema.DefaultVersionColumn
		}
		expectLint(t, mock, d, c.spec.Table, tok, ver)
		mock.ExpectExec(anySQL).WillReturnResult(sqlmock.NewResult(0, 1))
	}
	_, err = db.ExecContext(withTok(7), "UPDATE "+c.spec.Table+" SET x = 1")
	mockMet(t, mock)
	if err != nil && !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("lazy check: %v, want nil or ErrSchema", err)
	}
	return err
}

// noSideDoors is a dialect without its SideDoorFinder (whose catalog queries the
// verdict tests do not mock; the side doors are tested on real databases).
type noSideDoors struct {
	dialect.Dialect
	dialect.Guarder
	dialect.NotNullFixer
	dialect.Tombstoner
}

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r noSideDoors) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(noSideDoors{}, r.Dialect)
}

// ExactQuotedIdents forwards the dialect's dialect.ExactIdenter: how column names
// match is part of the column verdict.
func (n noSideDoors) ExactQuotedIdents() bool {
	e, ok := n.Dialect.(dialect.ExactIdenter)
	return ok && e.ExactQuotedIdents()
}

func withoutSideDoors(d dialect.Dialect) dialect.Dialect {
	return noSideDoors{d, d.(dialect.Guarder), d.(dialect.NotNullFixer), d.(dialect.Tombstoner)}
}

// checkSchemaVerdict runs schema.Check over sqlmock; the guard and the tombstone guard
// are reported installed (the primary key is id), so that every problem is about the
// table's columns.
func checkSchemaVerdict(t *testing.T, d dialect.Dialect, c verdictCase) schema.TableReport {
	t.Helper()
	db, mock, err := sqlmock.New(sqlmock.QueryMatcherOption(verdictMatcher))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, _ := d.ColumnsQuery(tableOf(t, c.spec.Table))
	mock.ExpectQuery(q).WillReturnRows(c.rows())
	if c.cols != nil {
		mock.ExpectQuery(anySQL).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(1)))                                                       // guard
		mock.ExpectQuery(anySQL).WillReturnRows(sqlmock.NewRows([]string{"name", "type", "collation", "schema"}).AddRow("id", "bigint", "", "public")) // primary key
		mock.ExpectQuery(anySQL).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(1)))                                                       // tombstones
	}
	reps, err := schema.Check(context.Background(), db, withoutSideDoors(d), c.spec)
	if err != nil {
		t.Fatalf("schema.Check: %v", err)
	}
	mockMet(t, mock)
	return reps[0]
}

func tableOf(t *testing.T, s string) dialect.TableName {
	t.Helper()
	tn, err := dialect.ParseTableName(s)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// sameVerdict fails unless the lazy check's answer and schema.Check's report agree:
// both fit, or the *SchemaError's Problem and Fix are the report's, joined.
func sameVerdict(t *testing.T, lazy error, rep schema.TableReport, wantFit bool, wantProblems int) {
	t.Helper()
	if rep.OK() != wantFit || (lazy == nil) != wantFit {
		t.Fatalf("fit: lazy check %v, schema.Check %v (%q); want %v", lazy, rep.OK(), rep.Problems, wantFit)
	}
	if wantProblems >= 0 && len(rep.Problems) != wantProblems {
		t.Errorf("schema.Check problems = %q, want %d", rep.Problems, wantProblems)
	}
	if wantFit {
		return
	}
	var se *fencedsql.SchemaError
	if !errors.As(lazy, &se) {
		t.Fatalf("lazy check: %v (%T), want a *SchemaError", lazy, lazy)
	}
	if want := strings.Join(rep.Problems, "; "); se.Problem != want {
		t.Errorf("lazy Problem = %q\nCheckSchema     = %q", se.Problem, want)
	}
	if want := strings.Join(rep.Fix, "; "); se.Fix != want {
		t.Errorf("lazy Fix = %q\nCheckSchema = %q", se.Fix, want)
	}
}

// The lazy check before the first guarded write and schema.Check give the same
// verdict, with the same problems and fixes, for every case and dialect.
func TestSchemaVerdictSharedMock(t *testing.T) {
	for _, dc := range mockDialects {
		for _, c := range verdictCases {
			if e, ok := dc.d.(dialect.ExactIdenter); ok && e.ExactQuotedIdents() && c.foldOnly {
				c.fit, c.problems = false, 2
			}
			t.Run(dc.name+"/"+c.name, func(t *testing.T) {
				lazy := lazyVerdict(t, dc.d, c)
				rep := checkSchemaVerdict(t, dc.d, c)
				sameVerdict(t, lazy, rep, c.fit, c.problems)
				if rep.Exists != (c.cols != nil) {
					t.Errorf("Exists = %v", rep.Exists)
				}
			})
		}
	}
}

// The same on a real SQLite database: the lazy check through the fenced driver and
// schema.Check through the plain one, on the same file (the guard and the tombstone
// guard installed, so that schema.Check's only problems are the columns'). The lazy
// check requires neither guard.
func TestSchemaVerdictSharedSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.ToSlash(filepath.Join(t.TempDir(), "v.db"))
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	g := sqlite.Dialect.(dialect.Guarder)
	ts := sqlite.Dialect.(dialect.Tombstoner)
	cases := []struct {
		spec     schema.GuardSpec
		ddl      string // "" : no such table
		fit      bool
		problems int
	}{
		{schema.GuardSpec{Table: "fit"}, "CREATE TABLE fit (id INTEGER PRIMARY KEY, x INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", true, 0},
		{schema.GuardSpec{Table: "upper"}, "CREATE TABLE upper (id INTEGER PRIMARY KEY, x INT, FENCE_TOKEN BIGINT NOT NULL DEFAULT 0, Version BIGINT NOT NULL DEFAULT 0)", true, 0},
		{schema.GuardSpec{Table: "main.qual"}, "CREATE TABLE qual (id INTEGER PRIMARY KEY, x INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", true, 0},
		{schema.GuardSpec{Table: "bare"}, "CREATE TABLE bare (id INTEGER PRIMARY KEY, x INT)", false, 2},
		{schema.GuardSpec{Table: "nover"}, "CREATE TABLE nover (id INTEGER PRIMARY KEY, x INT, fence_token BIGINT NOT NULL DEFAULT 0)", false, 1},
		{schema.GuardSpec{Table: "nulltok"}, "CREATE TABLE nulltok (id INTEGER PRIMARY KEY, x INT, fence_token BIGINT DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", false, 1},
		{schema.GuardSpec{Table: "nullboth"}, "CREATE TABLE nullboth (id INTEGER PRIMARY KEY, x INT, fence_token BIGINT, version BIGINT)", false, 2},
		{schema.GuardSpec{Table: "custom", TokenColumn: "tok", VersionColumn: "ver"}, "CREATE TABLE custom (id INTEGER PRIMARY KEY, x INT, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT)", false, 1},
		{schema.GuardSpec{Table: "nosuch"}, "", false, 1},
	}
	for _, c := range cases {
		if c.ddl == "" {
			continue
		}
		if _, err := raw.ExecContext(ctx, c.ddl); err != nil {
			t.Fatal(err)
		}
		tn := tableOf(t, c.spec.Table)
		tok, ver := c.spec.TokenColumn, c.spec.VersionColumn
		if tok == "" {
			tok, ver = schema.DefaultTokenColumn, schema.DefaultVersionColumn
		}
		for _, s := range append(g.GuardDDL(tn, tok, ver), ts.TombstoneDDL(tn, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, tok)...) {
			if _, err := raw.ExecContext(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range cases {
		t.Run(c.spec.Table, func(t *testing.T) {
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, c.spec)
			if err != nil {
				t.Fatal(err)
			}
			vc := verdictCase{spec: c.spec}
			fdb := fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), "file:"+path), fencedsql.WithDialect(sqlite.Dialect), vc.guardOption())
			defer fdb.Close()
			_, lazy := fdb.ExecContext(withTok(7), "UPDATE "+c.spec.Table+" SET x = 1")
			if lazy != nil && !errors.Is(lazy, fencedsql.ErrSchema) {
				t.Fatalf("lazy check: %v", lazy)
			}
			sameVerdict(t, lazy, reps[0], c.fit, c.problems)
		})
	}
}

// A failed column check query: the SchemaError prints its cause and says how to run
// under a mock driver.
func TestSchemaErrorCheckQueryFails(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d, fencedsql.WithSchemaCheck(true))
			expectOpenAccounts(mock, dc.d)
			expectSessionCheck(mock, dc.d)
			expectNamePath(mock, dc.d)
			// No expectation for the column query: sqlmock refuses it.
			_, err := db.ExecContext(withTok(7), "UPDATE accounts SET x = 1")
			var se *fencedsql.SchemaError
			if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Err == nil {
				t.Fatalf("err = %v (%T), want a *SchemaError with a cause", err, err)
			}
			msg := err.Error()
			for _, want := range []string{"accounts", "the column check query failed", "fencedsql.WithSchemaCheck(false)", "fencedtest", se.Err.Error()} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
		})
	}
	// Error includes the cause, between the problem and the fix.
	cause := errors.New("boom")
	e := &fencedsql.SchemaError{Table: "t", Problem: "p", Fix: "f", Err: cause}
	if got, want := e.Error(), "fencedsql: guarded table t: p: boom; fix: f"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, cause) || !errors.Is(e, fencedsql.ErrSchema) {
		t.Error("cause or ErrSchema not reachable")
	}
	if got := (&fencedsql.SchemaError{Problem: "p"}).Error(); got != "fencedsql: p" {
		t.Errorf("Error() without table or cause = %q", got)
	}
}
