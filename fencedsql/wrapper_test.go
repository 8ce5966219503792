package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/jmoiron/sqlx"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"

	// The sqlx tests need the bind styles of the fenced driver names.
	_ "github.com/fencedsql/fencedsql/dialects/mysql/mysqlsqlx"
	_ "github.com/fencedsql/fencedsql/dialects/postgres/pgsqlx"
	_ "github.com/fencedsql/fencedsql/dialects/sqlite/sqlitesqlx"
)

// ---- a recording fake driver ----

type fakeCall struct {
	sql  string
	args []any
}

// fakeRec records what reached the fake driver.
type fakeRec struct {
	mu       sync.Mutex
	dsns     []string
	counts   map[string]int
	execs    []fakeCall // ExecContext, and Exec on prepared statements
	queries  []fakeCall
	prepared []string
	txOpts   []driver.TxOptions
}

func newFakeRec() *fakeRec { return &fakeRec{counts: map[string]int{}} }

func (r *fakeRec) inc(what string) {
	r.mu.Lock()
	r.counts[what]++
	r.mu.Unlock()
}

func (r *fakeRec) count(what string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[what]
}

func (r *fakeRec) add(list *[]fakeCall, sql string, args []driver.NamedValue) {
	c := fakeCall{sql: sql}
	for _, a := range args {
		c.args = append(c.args, a.Value)
	}
	r.mu.Lock()
	*list = append(*list, c)
	r.mu.Unlock()
}

func (r *fakeRec) lastExec() fakeCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.execs) == 0 {
		return fakeCall{}
	}
	return r.execs[len(r.execs)-1]
}

func (r *fakeRec) lastDSN() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dsns) == 0 {
		return ""
	}
	return r.dsns[len(r.dsns)-1]
}

// fakeDriver opens minimal connections (only driver.Conn) or full ones (every
// optional interface). skipArgs makes ExecContext/QueryContext answer driver.ErrSkip
// when given arguments, as go-sql-driver/mysql does without interpolateParams.
type fakeDriver struct {
	rec      *fakeRec
	full     bool
	skipArgs bool
}

func (d *fakeDriver) Open(dsn string) (driver.Conn, error) {
	d.rec.mu.Lock()
	d.rec.dsns = append(d.rec.dsns, dsn)
	d.rec.mu.Unlock()
	m := &minConn{rec: d.rec}
	if d.full {
		return &fullConn{minConn: m, skipArgs: d.skipArgs}, nil
	}
	return m, nil
}

type minConn struct{ rec *fakeRec }

func (c *minConn) Prepare(query string) (driver.Stmt, error) {
	c.rec.inc("Prepare")
	c.rec.mu.Lock()
	c.rec.prepared = append(c.rec.prepared, query)
	c.rec.mu.Unlock()
	return &fakeStmt{rec: c.rec, sql: query}, nil
}
func (c *minConn) Close() error { return nil }
func (c *minConn) Begin() (driver.Tx, error) {
	c.rec.inc("Begin")
	return &fakeTx{rec: c.rec}, nil
}

type fakeTx struct{ rec *fakeRec }

func (t *fakeTx) Commit() error   { t.rec.inc("Commit"); return nil }
func (t *fakeTx) Rollback() error { t.rec.inc("Rollback"); return nil }

// fakeStmt only has the legacy driver.Stmt methods.
type fakeStmt struct {
	rec *fakeRec
	sql string
}

func (s *fakeStmt) Close() error  { return nil }
func (s *fakeStmt) NumInput() int { return -1 }
func (s *fakeStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.rec.inc("StmtExec")
	s.rec.add(&s.rec.execs, s.sql, toNamed(args))
	return driver.RowsAffected(1), nil
}
func (s *fakeStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.rec.inc("StmtQuery")
	s.rec.add(&s.rec.queries, s.sql, toNamed(args))
	return &fakeRows{}, nil
}

func toNamed(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

// fakeRows returns one row (42) and implements a Rows extension.
type fakeRows struct{ done bool }

func (r *fakeRows) Columns() []string { return []string{"id"} }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0] = int64(42)
	return nil
}
func (r *fakeRows) ColumnTypeDatabaseTypeName(int) string { return "INT8" }
func (r *fakeRows) ColumnTypeScanType(int) reflect.Type   { return reflect.TypeFor[int64]() }

// customValue is a value only the fake's NamedValueChecker accepts (like pgx's own types).
type customValue struct{ v int }

type fullConn struct {
	*minConn
	skipArgs bool
}

var (
	_ driver.Pinger             = (*fullConn)(nil)
	_ driver.SessionResetter    = (*fullConn)(nil)
	_ driver.Validator          = (*fullConn)(nil)
	_ driver.NamedValueChecker  = (*fullConn)(nil)
	_ driver.ExecerContext      = (*fullConn)(nil)
	_ driver.QueryerContext     = (*fullConn)(nil)
	_ driver.ConnPrepareContext = (*fullConn)(nil)
	_ driver.ConnBeginTx        = (*fullConn)(nil)
)

func (c *fullConn) Ping(context.Context) error         { c.rec.inc("Ping"); return nil }
func (c *fullConn) ResetSession(context.Context) error { c.rec.inc("ResetSession"); return nil }
func (c *fullConn) IsValid() bool                      { c.rec.inc("IsValid"); return true }
func (c *fullConn) CheckNamedValue(nv *driver.NamedValue) error {
	c.rec.inc("CheckNamedValue")
	if v, ok := nv.Value.(customValue); ok {
		nv.Value = fmt.Sprintf("custom:%d", v.v)
		return nil
	}
	return driver.ErrSkip
}
func (c *fullConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if c.skipArgs && len(args) > 0 {
		c.rec.inc("ExecContextSkip")
		return nil, driver.ErrSkip
	}
	c.rec.inc("ExecContext")
	c.rec.add(&c.rec.execs, q, args)
	return driver.RowsAffected(1), nil
}
func (c *fullConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if c.skipArgs && len(args) > 0 {
		c.rec.inc("QueryContextSkip")
		return nil, driver.ErrSkip
	}
	c.rec.inc("QueryContext")
	c.rec.add(&c.rec.queries, q, args)
	return &fakeRows{}, nil
}
func (c *fullConn) PrepareContext(_ context.Context, q string) (driver.Stmt, error) {
	c.rec.inc("PrepareContext")
	c.rec.mu.Lock()
	c.rec.prepared = append(c.rec.prepared, q)
	c.rec.mu.Unlock()
	return &fakeStmt{rec: c.rec, sql: q}, nil
}
func (c *fullConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.rec.inc("BeginTx")
	c.rec.mu.Lock()
	c.rec.txOpts = append(c.rec.txOpts, opts)
	c.rec.mu.Unlock()
	return &fakeTx{rec: c.rec}, nil
}

var regSeq atomic.Int64

// register registers the fake under a fresh name and returns it.
func registerFake(t *testing.T, d driver.Driver, opts ...fencedsql.Option) string {
	t.Helper()
	name := fmt.Sprintf("fenced-fake-%d", regSeq.Add(1))
	fencedsql.Register(name, d, append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}, opts...)...)
	return name
}

// ---- DSN handling ----

// dsnDialect is the dialect whose driver reads dsn's syntax: go-sql-driver/mysql's
// user:pw@tcp(…)/db, SQLite's file: URIs, else PostgreSQL's.
func dsnDialect(dsn string) dialect.Dialect {
	switch {
	case strings.Contains(dsn, "@tcp("):
		return mysqldialect.Dialect
	case strings.HasPrefix(dsn, "file:"):
		return sqlite.Dialect
	}
	return postgres.Dialect
}

func TestDSNFencedParamsRemoved(t *testing.T) {
	cases := []struct {
		name, dsn, clean string
	}{
		{"url", "postgres://u:secret@h/db?sslmode=disable&fenced_tables=a,b", "postgres://u:secret@h/db?sslmode=disable"},
		{"url, ours first", "postgres://u:secret@h/db?fenced_tables=a,b&sslmode=disable", "postgres://u:secret@h/db?sslmode=disable"},
		{"url, only ours", "postgres://u:secret@h/db?fenced_tables=a,b", "postgres://u:secret@h/db"},
		{"mysql", "u:pw@tcp(h:3306)/db?parseTime=true&fenced_tables=a,b", "u:pw@tcp(h:3306)/db?parseTime=true"},
		{"sqlite file URI", "file:shop.db?fenced_tables=a,b&_pragma=busy_timeout(5000)", "file:shop.db?_pragma=busy_timeout(5000)"},
		{"key/value", "host=h fenced_tables=a,b user=u", "host=h user=u"},
		{"key/value, ours last", "host=h user=u password=secret fenced_tables=a,b", "host=h user=u password=secret"},
		{"several of ours", "postgres://h/db?fenced_tables=a,b&fenced_strict=true&fenced_schema_check=false&x=1", "postgres://h/db?x=1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newFakeRec()
			name := registerFake(t, &fakeDriver{rec: rec, full: true}, fencedsql.WithDialect(dsnDialect(c.dsn)), fencedsql.WithSchemaCheck(false))
			db, err := sql.Open(name, c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Ping(); err != nil {
				t.Fatal(err)
			}
			if got := rec.lastDSN(); got != c.clean {
				t.Errorf("the wrapped driver was opened with %q, want %q", got, c.clean)
			}
			// The tables named in the DSN are guarded.
			for _, q := range []string{"UPDATE a SET x = 1", "DELETE FROM b WHERE id = 1", "INSERT INTO a (x) VALUES (1)"} {
				if _, err := db.Exec(q); !errors.Is(err, fencedsql.ErrNoToken) {
					t.Errorf("%s: err = %v, want ErrNoToken", q, err)
				}
			}
			if _, err := db.Exec("UPDATE c SET x = 1"); err != nil {
				t.Errorf("unguarded table: %v", err)
			}
		})
	}
}

// DSNs without parameters of ours reach the driver unchanged, byte for byte.
func TestDSNUntouched(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:secret@h/db?sslmode=disable",
		"u:pw@tcp(h:3306)/db?parseTime=true",
		"host=h   user=u password='a  b'",
		"host=h password=ab?c&d",
		"file:shop.db",
		"",
	} {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec})
		db, err := sql.Open(name, dsn)
		if err != nil {
			t.Fatalf("%q: %v", dsn, err)
		}
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if got := rec.lastDSN(); got != dsn {
			t.Errorf("opened with %q, want %q", got, dsn)
		}
		db.Close()
	}
}

// "Bytes that are not ours are kept as they are" (dsn.go): also in the key/value form,
// where values may be quoted and may contain '?'.
func TestDSNKeyValueOtherBytesKept(t *testing.T) {
	cases := []struct{ dsn, clean string }{
		{"host=h password='a  b' fenced_tables=a", "host=h password='a  b'"},
		{"host=h password=ab?c fenced_tables=a", "host=h password=ab?c"},
	}
	for _, c := range cases {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec}, fencedsql.WithSchemaCheck(false))
		db, err := sql.Open(name, c.dsn)
		if err != nil {
			t.Errorf("%q: %v", c.dsn, err)
			continue
		}
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		if got := rec.lastDSN(); got != c.clean {
			t.Errorf("DSN %q reached the driver as %q, want %q", c.dsn, got, c.clean)
		}
		if _, err := db.Exec("UPDATE a SET x = 1"); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Errorf("DSN %q: table a not guarded (err = %v)", c.dsn, err)
		}
		db.Close()
	}
}

func TestDSNErrors(t *testing.T) {
	for _, dsn := range []string{
		"postgres://u:secret@h/db?sslmode=disable&fenced_foo=1",
		"u:secret@tcp(h:3306)/db?fenced_foo=1",
		"host=h password=secret fenced_foo=1",
		"postgres://u:secret@h/db?fenced_strict=perhaps",
		"postgres://u:secret@h/db?fenced_tables=a%20b",
		"postgres://u:secret@h/db?fenced_tables=a&fenced_token_column=x%22y",
	} {
		rec := newFakeRec()
		name := registerFake(t, &fakeDriver{rec: rec}, fencedsql.WithDialect(dsnDialect(dsn)))
		db, err := sql.Open(name, dsn)
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: err = %v, want *ConfigError", dsn, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error quotes the password: %v", dsn, err)
		}
		if len(rec.dsns) != 0 {
			t.Errorf("%q: the wrapped driver was opened", dsn)
		}
	}
}

// fenced_token_column, fenced_version_column, fenced_strict and fenced_schema_check
// apply to the DSN's tables.
func TestDSNOptions(t *testing.T) {
	rec := newFakeRec()
	name := registerFake(t, &fakeDriver{rec: rec, full: true})
	db, err := sql.Open(name, "postgres://h/db?fenced_tables=jobs&fenced_token_column=ft&fenced_version_column=ver&fenced_strict=true&fenced_schema_check=false")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), `UPDATE jobs SET state = $1`, "done"); err != nil {
		t.Fatal(err)
	}
	got := rec.lastExec()
	want := fakeCall{`UPDATE jobs SET state = $1, "ver" = "ver" + 1, "ft" = CASE WHEN "ft" < $2 THEN $2::bigint ELSE NULL END`, []any{"done", int64(5)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}
	if rec.count("QueryContext") != 0 {
		t.Errorf("schema check ran although fenced_schema_check=false")
	}
}

func TestRegisterTwiceDoesNotPanic(t *testing.T) {
	rec := newFakeRec()
	name := registerFake(t, &fakeDriver{rec: rec})
	fencedsql.Register(name, &fakeDriver{rec: rec})
	fencedsql.Register(postgres.DriverName, &fakeDriver{rec: rec})
	sql.Register("fenced-plain-"+name, &fakeDriver{rec: rec})
	fencedsql.Register("fenced-plain-"+name, &fakeDriver{rec: rec})
	for _, n := range []string{"fenced-pgx", "fenced-mysql", "fenced-sqlite", name} {
		if !slices.Contains(sql.Drivers(), n) {
			t.Errorf("%s is not registered", n)
		}
	}
}

func TestSqlxBindTypes(t *testing.T) {
	for name, want := range map[string]int{
		"fenced-pgx":    sqlx.DOLLAR,
		"fenced-mysql":  sqlx.QUESTION,
		"fenced-sqlite": sqlx.QUESTION,
	} {
		if got := sqlx.BindType(name); got != want {
			t.Errorf("sqlx.BindType(%q) = %d, want %d", name, got, want)
		}
	}
	if got := sqlx.Rebind(sqlx.BindType("fenced-pgx"), "UPDATE accounts SET x = ? WHERE id = ?"); got != "UPDATE accounts SET x = $1 WHERE id = $2" {
		t.Errorf("Rebind = %q", got)
	}
}

// sqlx over the embedded SQLite: named queries, rebinding and Get work through the
// wrapper.
func TestSqlxOverFencedSQLite(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "x.db") + "?fenced_tables=accounts&fenced_allow=ddl"
	db, err := sqlx.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.MustExec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	ctx := fencedsql.WithToken(context.Background(), 3)
	if _, err := db.NamedExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (:id, :balance)`, map[string]any{"id": 1, "balance": 10}); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Balance int64  `db:"balance"`
		Token   uint64 `db:"fence_token"`
		Version int64  `db:"version"`
	}
	if err := db.GetContext(ctx, &row, db.Rebind(`SELECT balance, fence_token, version FROM accounts WHERE id = ?`), 1); err != nil {
		t.Fatal(err)
	}
	if row.Balance != 10 || row.Token != 3 || row.Version != 1 {
		t.Errorf("row = %+v", row)
	}
}

// ---- optional interfaces ----

func openFake(t *testing.T, d *fakeDriver, opts ...fencedsql.Option) *sql.DB {
	t.Helper()
	base := []fencedsql.Option{fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false)}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(d, "fake"), append(base, opts...)...)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOptionalInterfacesForwarded(t *testing.T) {
	rec := newFakeRec()
	db := openFake(t, &fakeDriver{rec: rec, full: true})
	ctx := context.Background()

	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.count("Ping") == 0 {
		t.Error("Pinger not reached")
	}

	// ExecerContext and NamedValueChecker (a value only the wrapped driver accepts).
	if _, err := db.ExecContext(ctx, `UPDATE other SET x = $1`, customValue{5}); err != nil {
		t.Fatal(err)
	}
	if rec.count("ExecContext") != 1 || rec.count("CheckNamedValue") == 0 {
		t.Errorf("ExecContext %d, CheckNamedValue %d", rec.count("ExecContext"), rec.count("CheckNamedValue"))
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`UPDATE other SET x = $1`, []any{"custom:5"}}) {
		t.Errorf("sent %+v", got)
	}
	// A guarded write goes through ExecerContext too, with the custom value converted.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = $1`, customValue{6}); err != nil {
		t.Fatal(err)
	}
	want := fakeCall{`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`, []any{"custom:6", int64(7)}}
	if got := rec.lastExec(); !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}

	// SessionResetter and Validator run when database/sql reuses the connection.
	if rec.count("ResetSession") == 0 {
		t.Error("SessionResetter not reached")
	}
	if rec.count("IsValid") == 0 {
		t.Error("Validator not reached")
	}

	// QueryerContext, with the Rows extensions intact.
	rows, err := db.QueryContext(ctx, `SELECT id FROM accounts`)
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	if err != nil || cts[0].DatabaseTypeName() != "INT8" || cts[0].ScanType() != reflect.TypeFor[int64]() {
		t.Errorf("column types of a pass-through query: %v %v", cts, err)
	}
	rows.Close()
	if rec.count("QueryContext") != 1 {
		t.Error("QueryerContext not reached")
	}
	// A guarded RETURNING query keeps the Rows extensions too.
	rows, err = db.QueryContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = 1 RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	cts, err = rows.ColumnTypes()
	if err != nil || cts[0].DatabaseTypeName() != "INT8" || cts[0].ScanType() != reflect.TypeFor[int64]() {
		t.Errorf("column types of a guarded RETURNING query: %v %v", cts, err)
	}
	var id int64
	if !rows.Next() || rows.Scan(&id) != nil || id != 42 {
		t.Errorf("RETURNING row: %d", id)
	}
	rows.Close()

	// ConnPrepareContext, for pass-through and guarded statements.
	st, err := db.PrepareContext(ctx, `SELECT 1`)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = db.PrepareContext(ctx, `INSERT INTO accounts (id) VALUES ($1)`)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if rec.count("PrepareContext") != 2 || rec.count("Prepare") != 0 {
		t.Errorf("PrepareContext %d, Prepare %d", rec.count("PrepareContext"), rec.count("Prepare"))
	}
	if !slices.Contains(rec.prepared, `INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`) {
		t.Errorf("prepared %q", rec.prepared)
	}

	// ConnBeginTx, with the options forwarded.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if rec.count("BeginTx") != 1 || rec.count("Begin") != 0 || rec.count("Commit") != 1 {
		t.Errorf("BeginTx %d, Begin %d, Commit %d", rec.count("BeginTx"), rec.count("Begin"), rec.count("Commit"))
	}
	if len(rec.txOpts) != 1 || rec.txOpts[0].Isolation != driver.IsolationLevel(sql.LevelSerializable) || !rec.txOpts[0].ReadOnly {
		t.Errorf("tx options %+v", rec.txOpts)
	}
}

// A connection implementing none of the optional interfaces still works: database/sql
// falls back to Prepare and Begin.
func TestMinimalConn(t *testing.T) {
	rec := newFakeRec()
	db := openFake(t, &fakeDriver{rec: rec})
	ctx := context.Background()

	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE other SET x = $1`, 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`UPDATE other SET x = $1`, []any{int64(1)}}) {
		t.Errorf("pass-through exec: %+v", got)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = $1`, 1); err != nil {
		t.Fatal(err)
	}
	want := fakeCall{`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`, []any{int64(1), int64(7)}}
	if got := rec.lastExec(); !reflect.DeepEqual(got, want) {
		t.Errorf("guarded exec: %+v\nwant %+v", got, want)
	}
	var id int64
	if err := db.QueryRowContext(ctx, `SELECT id FROM accounts WHERE id = $1`, 42).Scan(&id); err != nil || id != 42 {
		t.Fatalf("query: %d %v", id, err)
	}
	if err := db.QueryRowContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = 1 RETURNING id`).Scan(&id); err != nil || id != 42 {
		t.Fatalf("guarded query: %d %v", id, err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM accounts WHERE id = $1`, 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if rec.count("Begin") != 1 || rec.count("Commit") != 1 {
		t.Errorf("Begin %d, Commit %d", rec.count("Begin"), rec.count("Commit"))
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2`, []any{int64(3), int64(8)}}) {
		t.Errorf("delete: %+v", got)
	}
	// Transaction options cannot be honoured without ConnBeginTx.
	if _, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err == nil {
		t.Error("read-only transaction on a driver without ConnBeginTx: no error")
	}
	if rec.count("Prepare") == 0 {
		t.Error("Prepare was never used")
	}
}

// go-sql-driver/mysql answers Exec with arguments by driver.ErrSkip: the wrapper must
// then prepare the rewritten statement itself.
func TestErrSkipFallsBackToPrepare(t *testing.T) {
	rec := newFakeRec()
	db := openFake(t, &fakeDriver{rec: rec, full: true, skipArgs: true}, fencedsql.WithDialect(sqlite.Dialect))
	ctx := fencedsql.WithToken(context.Background(), 7)
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET x = ? WHERE id = ?`, 1, 2); err != nil {
		t.Fatal(err)
	}
	want := fakeCall{`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`, []any{int64(1), int64(7), int64(7), int64(2)}}
	if got := rec.lastExec(); !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}
	if rec.count("ExecContextSkip") == 0 || rec.count("StmtExec") != 1 {
		t.Errorf("ExecContextSkip %d, StmtExec %d", rec.count("ExecContextSkip"), rec.count("StmtExec"))
	}
	// A pass-through statement with arguments: database/sql prepares it.
	if _, err := db.ExecContext(ctx, `UPDATE other SET x = ?`, 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`UPDATE other SET x = ?`, []any{int64(1)}}) {
		t.Errorf("pass-through: %+v", got)
	}
	// A DELETE outside a transaction: both statements, inside one transaction.
	if _, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = ?`, 3); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`DELETE FROM accounts WHERE (id = ?) AND "fence_token" = ?`, []any{int64(3), int64(7)}}) {
		t.Errorf("delete: %+v", got)
	}
	if rec.count("BeginTx") != 1 || rec.count("Commit") != 1 {
		t.Errorf("BeginTx %d, Commit %d", rec.count("BeginTx"), rec.count("Commit"))
	}
	// A guarded RETURNING query.
	var id int64
	if err := db.QueryRowContext(ctx, `UPDATE accounts SET x = ? RETURNING id`, 1).Scan(&id); err != nil || id != 42 {
		t.Errorf("returning: %d %v", id, err)
	}
}

// ---- configuration errors ----

func TestInvalidGuardReportedOnUse(t *testing.T) {
	for name, opts := range map[string][]fencedsql.Option{
		"space":               {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a b")},
		"quote":               {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard(`x"y`)},
		"backtick":            {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("x`y")},
		"empty":               {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("")},
		"empty schema":        {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard(".accounts")},
		"three parts":         {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a.b.c")},
		"bad token column":    {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a", fencedsql.TokenColumn("f t"))},
		"same columns":        {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a", fencedsql.TokenColumn("v"), fencedsql.VersionColumn("V"))},
		"empty version colum": {fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("a", fencedsql.VersionColumn(""))},
		"no dialect":          {fencedsql.Guard("accounts")},
	} {
		t.Run(name, func(t *testing.T) {
			rec := newFakeRec()
			db := fencedsql.OpenDB(fencedsql.DSNConnector(&fakeDriver{rec: rec, full: true}, "fake"), opts...)
			defer db.Close()
			err := db.Ping()
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Ping = %v, want *ConfigError", err)
			}
			if _, err := db.Exec("SELECT 1"); !errors.As(err, &ce) {
				t.Errorf("Exec = %v, want *ConfigError", err)
			}
			if len(rec.dsns) != 0 {
				t.Errorf("the wrapped driver was opened")
			}

			// The same through Register and sql.Open.
			n := fmt.Sprintf("fenced-badguard-%d", regSeq.Add(1))
			fencedsql.Register(n, &fakeDriver{rec: rec}, opts...)
			db2, err := sql.Open(n, "x")
			if err == nil {
				err = db2.Ping()
				db2.Close()
			}
			if !errors.As(err, &ce) {
				t.Errorf("sql.Open/Ping = %v, want *ConfigError", err)
			}
		})
	}
}

// ---- behaviour on the embedded SQLite ----

func openSQLite(t *testing.T, opts string) *sql.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "t.db") + "?fenced_tables=accounts&fenced_allow=ddl" + opts
	db, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// A guarded DELETE whose WHERE clause checks the version the business code read (the
// classic optimistic delete) must delete the row, or fail; it must never report success
// with 0 rows because the wrapper's fencing UPDATE changed the version first.
func TestSQLiteDeleteWithVersionInWhere(t *testing.T) {
	db := openSQLite(t, "")
	ctx := fencedsql.WithToken(context.Background(), 7)
	if _, err := db.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 1, 10); err != nil {
		t.Fatal(err)
	}
	var ver int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM accounts WHERE id = ?`, 1).Scan(&ver); err != nil {
		t.Fatal(err)
	}
	res, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = ? AND version = ?`, 1, ver)
	if err != nil {
		return // refusing the form is acceptable
	}
	n, _ := res.RowsAffected()
	var left int
	db.QueryRow(`SELECT count(*) FROM accounts`).Scan(&left)
	if n != 1 || left != 0 {
		t.Errorf("DELETE … WHERE version = %d (the current version) succeeded with %d rows affected and %d rows left; want the row deleted", ver, n, left)
	}
}

// docs/design.md G1, G2, G3 on a real database: equal tokens are accepted, a lower one fails with
// ErrFenced and changes nothing, even for a multi-row statement.
func TestSQLiteFencing(t *testing.T) {
	db := openSQLite(t, "")
	w := func(tk uint64, q string, args ...any) error {
		_, err := db.ExecContext(fencedsql.WithToken(context.Background(), tk), q, args...)
		return err
	}
	if err := w(5, `INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	if err := w(5, `UPDATE accounts SET balance = balance + 1`); err != nil {
		t.Fatal(err)
	}
	if err := w(6, `UPDATE accounts SET balance = balance + 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	err := w(5, `UPDATE accounts SET balance = balance + 100`)
	var fe *fencedsql.FencedError
	if !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &fe) || fe.Token != 5 || fe.Table != "accounts" {
		t.Fatalf("stale multi-row UPDATE: %v", err)
	}
	if err := w(5, `DELETE FROM accounts`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale DELETE: %v", err)
	}
	type row struct{ bal, tok, ver int64 }
	var got []row
	rows, err := db.Query(`SELECT balance, fence_token, version FROM accounts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		rows.Scan(&r.bal, &r.tok, &r.ver)
		got = append(got, r)
	}
	rows.Close()
	want := []row{{1, 5, 2}, {2, 6, 3}}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	// ExpectVersion: a stale version fails with ErrVersionConflict, the current one works.
	vctx := fencedsql.ExpectVersion(fencedsql.WithToken(context.Background(), 6), 2)
	if _, err := db.ExecContext(vctx, `UPDATE accounts SET balance = 0 WHERE id = 2`); !errors.Is(err, fencedsql.ErrVersionConflict) {
		t.Errorf("stale version: %v", err)
	}
	vctx = fencedsql.ExpectVersion(fencedsql.WithToken(context.Background(), 6), 3)
	if _, err := db.ExecContext(vctx, `UPDATE accounts SET balance = 0 WHERE id = 2`); err != nil {
		t.Errorf("current version: %v", err)
	}
	// Upserts: a stale token fails, a newer one updates; the qualified forms work.
	upsert := `INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance`
	if err := w(4, upsert, 1, 50); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale upsert: %v", err)
	}
	if err := w(9, upsert, 1, 50); err != nil {
		t.Errorf("upsert: %v", err)
	}
	if err := w(9, `INSERT INTO main.accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance`, 1, 51); err != nil {
		t.Errorf("schema-qualified upsert: %v", err)
	}
	if err := w(9, `INSERT INTO accounts AS a (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = a.balance + 1`, 1, 0); err != nil {
		t.Errorf("aliased upsert: %v", err)
	}
	if err := w(9, `INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT DO NOTHING`, 1, 0); err != nil {
		t.Errorf("DO NOTHING: %v", err)
	}
	var r row
	db.QueryRow(`SELECT balance, fence_token, version FROM accounts WHERE id = 1`).Scan(&r.bal, &r.tok, &r.ver)
	if r != (row{52, 9, 5}) {
		t.Errorf("row 1 after upserts = %v, want {52 9 5}", r)
	}
	// The schema check passed for this table and found the real columns.
	if err := w(9, `INSERT INTO accounts (id) VALUES (3)`); err != nil {
		t.Errorf("insert: %v", err)
	}
}

// The lazy schema check against a real table without the fencing columns.
func TestSQLiteSchemaCheck(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "s.db") + "?fenced_tables=plain&fenced_allow=ddl"
	db, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE plain (id INTEGER PRIMARY KEY, x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 1), `UPDATE plain SET x = 1`)
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("err = %v, want ErrSchema", err)
	}
	var se *fencedsql.SchemaError
	if !errors.As(err, &se) || !strings.Contains(se.Fix, `ALTER TABLE plain ADD COLUMN "fence_token" BIGINT NOT NULL DEFAULT 0`) {
		t.Errorf("SchemaError = %+v", se)
	}
	// Applying the fix makes the write work (failures are not cached).
	for _, ddl := range strings.Split(se.Fix, "; ") {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 1), `UPDATE plain SET x = 1`); err != nil {
		t.Errorf("after the fix: %v", err)
	}
}
