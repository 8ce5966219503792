// The recording fake driver the wrapper's tests run over, and its registration.

package fencedsql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// fakeUnanswered are the texts of the queries the fake answers with an error, as a
// mock answers a query it was not told to expect: the wrapper's check that a listed
// table exists (schema.Columns) and its session query, which it sends with the schema
// check off too (red-team rt34d F1, F4) and whose failure it then logs. Answered with
// the fake's one row of 42, they would read as "no such table", or a session refused.
var fakeUnanswered = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	record := func(_ context.Context, q string, _ ...any) ([][]string, error) {
		out[q] = true
		return nil, errors.New("recorded")
	}
	for _, d := range []dialect.Dialect{postgres.Dialect, mysql.Dialect, sqlite.Dialect} {
		for _, t := range []dialect.TableName{{Name: "t"}, {Schema: "s", Name: "t"}} {
			_, _ = schema.Columns(context.Background(), record, d, t, schema.DefaultTokenColumn, schema.DefaultVersionColumn)
		}
		out[d.SessionQuery()] = true
	}
	delete(out, "")
	return out
})

var errFakeUnanswered = errors.New("fake: a query the fake does not answer")

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
	failNext error // returned once by the next Exec or Query of a prepared statement
}

// takeFail returns and clears failNext.
func (r *fakeRec) takeFail() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	err := r.failNext
	r.failNext = nil
	return err
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

// reset forgets what was recorded: a test counts from the point after the pool's
// first connection, whose reads of the guard records (sent even with the schema
// check off) are not what it tests.
func (r *fakeRec) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = map[string]int{}
	r.execs, r.queries, r.prepared, r.txOpts = nil, nil, nil, nil
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

func (s *fakeStmt) Close() error  { s.rec.inc("StmtClose"); return nil }
func (s *fakeStmt) NumInput() int { return -1 }
func (s *fakeStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.rec.inc("StmtExec")
	if err := s.rec.takeFail(); err != nil {
		return nil, err
	}
	s.rec.add(&s.rec.execs, s.sql, toNamed(args))
	return driver.RowsAffected(1), nil
}
func (s *fakeStmt) Query(args []driver.Value) (driver.Rows, error) {
	if fakeUnanswered()[s.sql] {
		return nil, errFakeUnanswered
	}
	s.rec.inc("StmtQuery")
	if err := s.rec.takeFail(); err != nil {
		return nil, err
	}
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
	if fakeUnanswered()[q] {
		return nil, errFakeUnanswered
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
