// Package fencedtest helps unit-test business code that writes through fencedsql, with
// go-sqlmock underneath the wrapper.
//
// Business code writes its own SQL (UPDATE accounts SET balance = balance - $1 WHERE
// id = $2); fencedsql sends a rewritten statement that carries the fencing token. With
// plain go-sqlmock a test has to spell out that rewritten text and the argument order.
// With fencedtest it states the business code's SQL and the token, and the expectation
// is derived by running the statement through the real wrapper once, over a recording
// driver:
//
//	db, mock := fencedtest.New(t, postgres.Dialect, fencedsql.Guard("accounts"))
//	mock.ExpectBegin()
//	mock.ExpectFencedExec(`UPDATE accounts SET balance = balance - $1 WHERE id = $2`, 7, 30, 42).
//		WillReturnResult(sqlmock.NewResult(0, 1))
//	mock.ExpectCommit()
//	err := Debit(fencedsql.WithToken(ctx, 7), db, 42, 30)
//
// ExpectFencedRejection makes the database answer with the dialect's fencing error, so
// the code under test sees fencedsql.ErrFenced exactly as against a real database.
//
// Transactions: the expectations follow the Mock's own ExpectBegin, ExpectCommit and
// ExpectRollback. Between ExpectBegin and ExpectCommit/ExpectRollback a statement is
// expected as the wrapper sends it inside the caller's transaction; outside, as it sends
// it on its own. The difference shows for DELETE, which the wrapper runs as a fencing
// UPDATE followed by the DELETE: inside a transaction both statements are expected;
// outside one, the wrapper's own BEGIN and COMMIT around them are expected too.
//
// The expectations cover statements executed directly (DB/Tx ExecContext and
// QueryContext), not prepared statements. Queries are matched with
// sqlmock.QueryMatcherEqual, after the random part of a savepoint that marks a
// dynamic statement (MySQL/MariaDB under WithDynamicSQL: fencedsql_dyn_ and 16 hex
// digits) is replaced by #: expect "SAVEPOINT fencedsql_dyn_#".
//
// go-sqlmock options (a value converter for argument types the real driver accepts,
// such as a []int64 for pgx) go through NewWith and WithSQLMockOptions:
//
//	db, mock := fencedtest.NewWith(t, postgres.Dialect,
//		fencedtest.WithOptions(fencedsql.Guard("accounts")),
//		fencedtest.WithSQLMockOptions(sqlmock.ValueConverterOption(conv)))
package fencedtest

import (
	"database/sql"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TB is the part of testing.TB that fencedtest uses; pass the test's *testing.T (or
// *testing.B).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Mock is go-sqlmock's Sqlmock with expectations stated in terms of the business
// code's SQL. Every sqlmock method is available; ExpectBegin, ExpectCommit and
// ExpectRollback also track whether later fenced expectations are inside a transaction.
type Mock struct {
	sqlmock.Sqlmock

	t   TB
	d   dialect.Dialect
	rec *recorder

	mu   sync.Mutex
	inTx bool
}

var seq atomic.Int64

// New opens a *sql.DB over go-sqlmock with fencing for dialect d and the given options
// (typically fencedsql.Guard), with the schema check off. It returns the fenced DB —
// the one to hand to the code under test — and its Mock, on which the test states its
// expectations. Both are closed when the test ends. The DB has one connection, as
// sqlmock has one. A setup error (nil dialect, an invalid option) fails the test with
// t.Fatalf. New(t, d, opts...) is NewWith(t, d, WithOptions(opts...)); for go-sqlmock
// options use NewWith with WithSQLMockOptions.
func New(t TB, d dialect.Dialect, opts ...fencedsql.Option) (*sql.DB, *Mock) {
	t.Helper()
	return NewWith(t, d, WithOptions(opts...))
}

// Option configures NewWith: fencedsql options for the wrapper (WithOptions) or
// go-sqlmock options for the mock underneath (WithSQLMockOptions).
type Option func(*settings)

type settings struct {
	fenced []fencedsql.Option
	mock   []any // go-sqlmock's options: their type is unexported, checked in NewWith
}

// WithOptions passes fencedsql options (fencedsql.Guard, WithStrict, …) to the wrapper,
// as New's opts. The options of several WithOptions add up, in order.
func WithOptions(opts ...fencedsql.Option) Option {
	return func(s *settings) { s.fenced = append(s.fenced, opts...) }
}

// WithSQLMockOptions passes go-sqlmock options to the mock underneath the wrapper —
// sqlmock.ValueConverterOption, sqlmock.MonitorPingsOption, sqlmock.QueryMatcherOption
// — in the order given, after fencedtest's own QueryMatcherOption(QueryMatcherEqual)
// (so a QueryMatcherOption given here replaces it). The usual one is a value converter
// for argument types the real driver accepts and database/sql's default converter does
// not, such as a []int64 that pgx sends as a PostgreSQL array:
//
//	db, mock := fencedtest.NewWith(t, postgres.Dialect,
//		fencedtest.WithOptions(fencedsql.Guard("accounts")),
//		fencedtest.WithSQLMockOptions(sqlmock.ValueConverterOption(conv)))
//
// The converter then applies to the arguments the code under test passes (through the
// wrapper, which forwards database/sql's value checks to sqlmock) and to the expected
// arguments, which sqlmock converts before comparing. go-sqlmock does not export its
// option type, so the parameter is ...any: anything else fails the test in NewWith.
func WithSQLMockOptions(opts ...any) Option {
	return func(s *settings) { s.mock = append(s.mock, opts...) }
}

// NewWith is New with fencedtest's own options: fencedsql options through WithOptions,
// go-sqlmock options through WithSQLMockOptions. It returns the fenced DB for the code
// under test and its Mock, both closed when the test ends; a setup error fails the test.
func NewWith(t TB, d dialect.Dialect, options ...Option) (*sql.DB, *Mock) {
	t.Helper()
	if d == nil {
		t.Fatalf("fencedtest.New: nil dialect")
	}
	var set settings
	for _, o := range options {
		if o != nil {
			o(&set)
		}
	}
	opts := set.fenced
	dsn := fmt.Sprintf("fencedtest-%d", seq.Add(1))
	mdb, mock, err := newSQLMock(sqlmock.NewWithDSN, dsn, sqlmock.QueryMatcherOption(queryMatcher), set.mock)
	if err != nil {
		t.Fatalf("fencedtest.New: sqlmock: %v", err)
	}
	base := []fencedsql.Option{fencedsql.WithDialect(d), fencedsql.WithSchemaCheck(false)}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), append(base, opts...)...)
	db.SetMaxOpenConns(1)
	rec, err := newRecorder(d, opts)
	if err != nil {
		db.Close()
		mdb.Close()
		t.Fatalf("fencedtest.New: %v", err)
	}
	t.Cleanup(func() {
		db.Close()
		mdb.Close()
		rec.db.Close()
	})
	return db, &Mock{Sqlmock: mock, t: t, d: d, rec: rec}
}

// newSQLMock calls open (sqlmock.NewWithDSN) with first and then opts converted to its
// option type O, which go-sqlmock does not export and type inference names here.
func newSQLMock[O any](open func(string, ...O) (*sql.DB, sqlmock.Sqlmock, error), dsn string, first O, opts []any) (*sql.DB, sqlmock.Sqlmock, error) {
	typed := append(make([]O, 0, len(opts)+1), first)
	for i, o := range opts {
		t, ok := o.(O)
		if !ok {
			return nil, nil, fmt.Errorf("WithSQLMockOptions: option %d is a %T, not a go-sqlmock option (sqlmock.ValueConverterOption, MonitorPingsOption, QueryMatcherOption)", i, o)
		}
		typed = append(typed, t)
	}
	return open(dsn, typed...)
}

// dynMark is the random name of a savepoint that marks a dynamic statement.
var dynMark = regexp.MustCompile(`fencedsql_dyn_[0-9a-f]{16}`)

// queryMatcher is sqlmock.QueryMatcherEqual over the SQL with dynMark's names written
// fencedsql_dyn_#.
var queryMatcher = sqlmock.QueryMatcherFunc(func(want, got string) error {
	return sqlmock.QueryMatcherEqual.Match(want, dynMark.ReplaceAllString(got, "fencedsql_dyn_#"))
})
