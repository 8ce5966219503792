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
// sqlmock.QueryMatcherEqual.
//
// go-sqlmock options (a value converter for argument types the real driver accepts,
// such as a []int64 for pgx) go through NewWith and WithSQLMockOptions:
//
//	db, mock := fencedtest.NewWith(t, postgres.Dialect,
//		fencedtest.WithOptions(fencedsql.Guard("accounts")),
//		fencedtest.WithSQLMockOptions(sqlmock.ValueConverterOption(conv)))
package fencedtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
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
	d   fencedsql.Dialect
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
func New(t TB, d fencedsql.Dialect, opts ...fencedsql.Option) (*sql.DB, *Mock) {
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
func NewWith(t TB, d fencedsql.Dialect, options ...Option) (*sql.DB, *Mock) {
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
	mdb, mock, err := newSQLMock(sqlmock.NewWithDSN, dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual), set.mock)
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

// ExpectBegin expects a transaction to begin; the fenced expectations that follow, up
// to ExpectCommit or ExpectRollback, are for statements inside it. It returns sqlmock's
// expectation (for WillReturnError, WillDelayFor).
func (m *Mock) ExpectBegin() *sqlmock.ExpectedBegin {
	m.setTx(true)
	return m.Sqlmock.ExpectBegin()
}

// ExpectCommit expects the transaction to commit; it ends the transaction for the
// fenced expectations that follow. It returns sqlmock's expectation.
func (m *Mock) ExpectCommit() *sqlmock.ExpectedCommit {
	m.setTx(false)
	return m.Sqlmock.ExpectCommit()
}

// ExpectRollback expects the transaction to roll back; it ends the transaction for the
// fenced expectations that follow. It returns sqlmock's expectation.
func (m *Mock) ExpectRollback() *sqlmock.ExpectedRollback {
	m.setTx(false)
	return m.Sqlmock.ExpectRollback()
}

func (m *Mock) setTx(in bool) {
	m.mu.Lock()
	m.inTx = in
	m.mu.Unlock()
}

// errUncounted is the RowsAffected error of the fencing UPDATE of a DELETE under Mock.
var errUncounted = errors.New("fencedtest: the fencing UPDATE's row count is not modelled")

func (m *Mock) txOpen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inTx
}

// ExpectFencedExec expects the statement the wrapper sends for userSQL, executed with
// args under token: the rewritten text, the user's args in their placeholders and the
// token where the wrapper puts it. args may hold sqlmock.Argument matchers. It returns
// the expectation of the statement that carries userSQL's effect, for
// WillReturnResult or WillReturnError.
//
// A DELETE is sent as a fencing UPDATE (expected here too, with no row count) and then
// the DELETE, whose expectation is returned. Outside a transaction the wrapper wraps
// the two in its own transaction, and its BEGIN and COMMIT are expected as well; make
// such a DELETE fail with ExpectFencedRejection, or build the expectations from
// Statements.
//
// A statement that writes no guarded table is expected as it is. One the wrapper
// refuses (ErrUnsupported, ErrNoToken — e.g. token 0) fails the test: nothing would
// reach the database.
func (m *Mock) ExpectFencedExec(userSQL string, token uint64, args ...driver.Value) *sqlmock.ExpectedExec {
	m.t.Helper()
	return m.ExpectFencedExecContext(fencedsql.WithToken(context.Background(), token), userSQL, args...)
}

// ExpectFencedExecContext is ExpectFencedExec with the token (and, through
// fencedsql.ExpectVersion, the expected version) taken from ctx, which should carry
// what the code under test's context carries. It returns the same expectation as
// ExpectFencedExec.
func (m *Mock) ExpectFencedExecContext(ctx context.Context, userSQL string, args ...driver.Value) *sqlmock.ExpectedExec {
	m.t.Helper()
	stmts := m.mustStatements(ctx, false, userSQL, args)
	e, _ := m.replay(stmts, nil)
	if e == nil {
		m.t.Fatalf("fencedtest: %q sends no statement", userSQL)
	}
	return e
}

// ExpectFencedQuery expects the statement the wrapper sends for userSQL run as a query
// (INSERT/UPDATE … RETURNING, or a pass-through SELECT) with args under token, and
// returns its expectation for WillReturnRows or WillReturnError. A DELETE … RETURNING
// must run inside a transaction: call ExpectBegin first.
func (m *Mock) ExpectFencedQuery(userSQL string, token uint64, args ...driver.Value) *sqlmock.ExpectedQuery {
	m.t.Helper()
	return m.ExpectFencedQueryContext(fencedsql.WithToken(context.Background(), token), userSQL, args...)
}

// ExpectFencedQueryContext is ExpectFencedQuery with the token (and expected version)
// taken from ctx. It returns the same expectation as ExpectFencedQuery.
func (m *Mock) ExpectFencedQueryContext(ctx context.Context, userSQL string, args ...driver.Value) *sqlmock.ExpectedQuery {
	m.t.Helper()
	stmts := m.mustStatements(ctx, true, userSQL, args)
	_, q := m.replay(stmts, nil)
	if q == nil {
		m.t.Fatalf("fencedtest: %q sends no query", userSQL)
	}
	return q
}

// ExpectFencedRejection expects the statement the wrapper sends for userSQL (executed
// with ExecContext) and answers it with the dialect's fencing error — the NOT NULL
// violation on the token column that a real database raises when a targeted row
// carries a newer token — so that the code under test gets fencedsql.ErrFenced. For a
// DELETE it is the fencing UPDATE that fails; outside a transaction the wrapper's own
// BEGIN and ROLLBACK are expected around it. Inside a transaction, expect the
// business code's rollback with ExpectRollback afterwards. It returns nothing: the
// expectations are complete (the fencing error is their answer), and a statement the
// wrapper would refuse before sending fails the test.
func (m *Mock) ExpectFencedRejection(userSQL string, token uint64, args ...driver.Value) {
	m.t.Helper()
	m.expectRejection(fencedsql.WithToken(context.Background(), token), false, userSQL, args)
}

// ExpectFencedQueryRejection is ExpectFencedRejection for a statement the code under
// test runs with QueryContext (… RETURNING). It returns nothing either.
func (m *Mock) ExpectFencedQueryRejection(userSQL string, token uint64, args ...driver.Value) {
	m.t.Helper()
	m.expectRejection(fencedsql.WithToken(context.Background(), token), true, userSQL, args)
}

func (m *Mock) expectRejection(ctx context.Context, query bool, userSQL string, args []driver.Value) {
	m.t.Helper()
	stmts := m.mustStatements(ctx, query, userSQL, args)
	first := -1
	for i, s := range stmts {
		if s.Op == OpExec || s.Op == OpQuery {
			first = i
			break
		}
	}
	if first < 0 || stmts[first].SQL == userSQL {
		m.t.Fatalf("fencedtest: %q is not a fenced write (it names no guarded table), so the database cannot reject its token", userSQL)
	}
	rej, err := m.fencingError(ctx, query, userSQL, args, stmts[first].SQL)
	if err != nil {
		m.t.Fatalf("fencedtest: %v", err)
	}
	failed, err := m.rec.run(ctx, m.txOpen(), query, userSQL, args, rej)
	if !errors.Is(err, fencedsql.ErrFenced) {
		m.t.Fatalf("fencedtest: %q answered with %v gives %v, not ErrFenced", userSQL, rej, err)
	}
	m.replay(failed, rej)
}

// fencingError finds the token column by asking the wrapper: the dialect's NOT NULL
// error on the default token column, then on each quoted identifier of the statement,
// until the wrapper maps one to ErrFenced. The error is then rebuilt with the guarded
// table's name.
func (m *Mock) fencingError(ctx context.Context, query bool, userSQL string, args []driver.Value, sent string) (error, error) {
	candidates := append([]string{fencedsql.DefaultTokenColumn}, quotedIdents(m.d, sent)...)
	seen := map[string]bool{}
	for _, col := range candidates {
		if seen[col] {
			continue
		}
		seen[col] = true
		probe, err := FencingError(m.d, "t", col)
		if err != nil {
			return nil, err
		}
		_, err = m.rec.run(ctx, m.txOpen(), query, userSQL, args, probe)
		var fe *fencedsql.FencedError
		if errors.As(err, &fe) {
			table := fe.Table
			if i := strings.LastIndexByte(table, '.'); i >= 0 {
				table = table[i+1:]
			}
			return FencingError(m.d, table, col)
		}
	}
	return nil, fmt.Errorf("no NOT NULL error of dialect %q makes the wrapper report ErrFenced for %q", m.d.Name(), userSQL)
}

// quotedIdents lists the identifiers quoted in the dialect's style in sql.
func quotedIdents(d fencedsql.Dialect, sql string) []string {
	q := d.QuoteIdent("x")
	if len(q) < 3 {
		return nil
	}
	open, close := q[0], q[len(q)-1]
	var out []string
	for i := 0; i < len(sql); i++ {
		if sql[i] != open {
			continue
		}
		j := strings.IndexByte(sql[i+1:], close)
		if j < 0 {
			break
		}
		out = append(out, sql[i+1:i+1+j])
		i += j + 1
	}
	return out
}

// Statements returns what the wrapper sends to the driver for userSQL run with args
// under ctx (which carries the token, as from fencedsql.WithToken, and optionally an
// expected version): inside a transaction when inTx is true, else on its own; through
// QueryContext when query is true, else ExecContext. The arguments are the user's
// values (or matchers) as given, and the token and version as int64. It returns the
// calls in order (BEGIN, EXEC/QUERY, COMMIT/ROLLBACK); it sets no expectation. An error
// is the wrapper's refusal (nothing would be sent), such as fencedsql.ErrNoToken.
func (m *Mock) Statements(ctx context.Context, inTx, query bool, userSQL string, args ...driver.Value) ([]Statement, error) {
	return m.rec.run(ctx, inTx, query, userSQL, args, nil)
}

func (m *Mock) mustStatements(ctx context.Context, query bool, userSQL string, args []driver.Value) []Statement {
	m.t.Helper()
	stmts, err := m.rec.run(ctx, m.txOpen(), query, userSQL, args, nil)
	if err != nil {
		m.t.Fatalf("fencedtest: the wrapper refuses %q, so nothing would reach the database: %v", userSQL, err)
	}
	return stmts
}

// replay turns recorded statements into sqlmock expectations. With rej, the statement
// that failed in the recording fails with rej. It returns the last Exec or Query
// expectation.
func (m *Mock) replay(stmts []Statement, rej error) (*sqlmock.ExpectedExec, *sqlmock.ExpectedQuery) {
	last := -1
	for i, s := range stmts {
		if s.Op == OpExec || s.Op == OpQuery {
			last = i
		}
	}
	var e *sqlmock.ExpectedExec
	var q *sqlmock.ExpectedQuery
	for i, s := range stmts {
		switch s.Op {
		case OpBegin:
			m.Sqlmock.ExpectBegin()
		case OpCommit:
			m.Sqlmock.ExpectCommit()
		case OpRollback:
			m.Sqlmock.ExpectRollback()
		case OpExec:
			e = m.Sqlmock.ExpectExec(s.SQL)
			if len(s.Args) == 0 {
				e.WithoutArgs()
			} else {
				e.WithArgs(s.Args...)
			}
			switch {
			case s.Failed:
				e.WillReturnError(rej)
			case i != last:
				// The fencing UPDATE of a DELETE. Its row count is left unknown so that the
				// wrapper's exactness check (the DELETE must delete as many rows as the
				// UPDATE stamped) does not judge the count the test gives the DELETE.
				e.WillReturnResult(sqlmock.NewErrorResult(errUncounted))
			}
		case OpQuery:
			q = m.Sqlmock.ExpectQuery(s.SQL)
			if len(s.Args) == 0 {
				q.WithoutArgs()
			} else {
				q.WithArgs(s.Args...)
			}
			if s.Failed {
				q.WillReturnError(rej)
			}
		}
	}
	return e, q
}

// FencingError returns the error dialect d's database raises when a fenced write meets
// a newer token: a NOT NULL violation on the token column col of table. It knows the
// dialects this module ships, by d.Name(): "postgres" (*pgconn.PgError 23502), "mysql"
// (*mysql.MySQLError 1048) and "sqlite" (a real *sqlite.Error from the embedded SQLite,
// which needs the "fenced-sqlite" driver that importing dialects/sqlite registers).
// It returns that error (give it to WillReturnError; the wrapper maps it to
// fencedsql.ErrFenced), or a second, non-nil error when it cannot produce one: an
// unknown dialect, or SQLite without the fenced-sqlite driver.
func FencingError(d fencedsql.Dialect, table, col string) (error, error) {
	switch d.Name() {
	case "postgres":
		return &pgconn.PgError{
			Severity: "ERROR", Code: "23502",
			Message:    fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", col, table),
			TableName:  table,
			ColumnName: col,
		}, nil
	case "mysql":
		return &mysql.MySQLError{Number: 1048, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: fmt.Sprintf("Column '%s' cannot be null", col)}, nil
	case "sqlite":
		return sqliteNotNull(table, col)
	}
	return nil, fmt.Errorf("fencedtest knows no fencing error for dialect %q", d.Name())
}

var sqliteErrs sync.Map // table + "\x00" + col → error

// sqliteNotNull produces SQLite's own NOT NULL violation on table.col by running one on
// an in-memory database (a *sqlite.Error cannot be built from outside its package).
func sqliteNotNull(table, col string) (error, error) {
	key := table + "\x00" + col
	if e, ok := sqliteErrs.Load(key); ok {
		return e.(error), nil
	}
	if !driverRegistered("fenced-sqlite") {
		return nil, errors.New(`the SQLite fencing error needs the "fenced-sqlite" driver: import _ "github.com/fencedsql/fencedsql/dialects/sqlite"`)
	}
	db, err := sql.Open("fenced-sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	if _, err := db.Exec(`CREATE TABLE ` + q(table) + ` (` + q(col) + ` INTEGER NOT NULL)`); err != nil {
		return nil, fmt.Errorf("producing the SQLite NOT NULL error: %w", err)
	}
	_, err = db.Exec(`INSERT INTO ` + q(table) + ` (` + q(col) + `) VALUES (NULL)`)
	if err == nil {
		return nil, errors.New("producing the SQLite NOT NULL error: the insert succeeded")
	}
	sqliteErrs.Store(key, err)
	return err, nil
}

func driverRegistered(name string) bool {
	for _, n := range sql.Drivers() {
		if n == name {
			return true
		}
	}
	return false
}

// ---- the recording driver ----

// Op is the kind of a driver call the wrapper makes.
type Op int

// The driver calls a Statement can record.
const (
	OpBegin Op = iota
	OpExec
	OpQuery
	OpCommit
	OpRollback
)

// String returns the call's name as Statement.String prints it: BEGIN, EXEC, QUERY,
// COMMIT or ROLLBACK.
func (o Op) String() string {
	switch o {
	case OpBegin:
		return "BEGIN"
	case OpExec:
		return "EXEC"
	case OpQuery:
		return "QUERY"
	case OpCommit:
		return "COMMIT"
	case OpRollback:
		return "ROLLBACK"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Statement is one call the wrapper made on the driver.
type Statement struct {
	Op     Op
	SQL    string         // OpExec, OpQuery
	Args   []driver.Value // in placeholder order: the user's values as given, the token and version as int64
	Failed bool           // the call was answered with the injected error
}

// String returns the call in one line: "EXEC <sql> [args]" (or QUERY), or BEGIN,
// COMMIT, ROLLBACK.
func (s Statement) String() string {
	if s.Op == OpExec || s.Op == OpQuery {
		return fmt.Sprintf("%v %s %v", s.Op, s.SQL, s.Args)
	}
	return s.Op.String()
}

// recorder is a fenced *sql.DB over a driver that records what the wrapper sends.
type recorder struct {
	db *sql.DB

	mu     sync.Mutex // serialises runs
	events []event
	fail   error // answer the next Exec/Query with this error
}

type event struct {
	op     Op
	sql    string
	args   []driver.NamedValue
	failed bool
}

func newRecorder(d fencedsql.Dialect, opts []fencedsql.Option) (*recorder, error) {
	r := &recorder{}
	all := append([]fencedsql.Option{fencedsql.WithDialect(d)}, opts...)
	all = append(all, fencedsql.WithSchemaCheck(false))
	r.db = fencedsql.OpenDB(fencedsql.DSNConnector(recDriver{r}, ""), all...)
	r.db.SetMaxOpenConns(1)
	if err := r.db.Ping(); err != nil {
		r.db.Close()
		return nil, err
	}
	return r, nil
}

func (r *recorder) add(e event) error {
	if e.op == OpExec || e.op == OpQuery {
		if r.fail != nil {
			e.failed = true
			r.events = append(r.events, e)
			err := r.fail
			r.fail = nil
			return err
		}
	}
	r.events = append(r.events, e)
	return nil
}

const sentinelPrefix = "\x00fencedtest-arg-"

// run executes userSQL on the recording DB and returns what reached the driver. With
// inTx, the statement runs in a transaction begun with ctx and the transaction's own
// BEGIN and ROLLBACK are left out. fail, when set, answers the first Exec or Query.
func (r *recorder) run(ctx context.Context, inTx, query bool, userSQL string, args []driver.Value, fail error) ([]Statement, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Placeholders for the user's arguments, recognisable in what the driver receives,
	// so that the user's own values (or sqlmock matchers) are put back in their place.
	callArgs := make([]any, len(args))
	for i, a := range args {
		s := fmt.Sprintf("%s%d", sentinelPrefix, i)
		if na, ok := a.(sql.NamedArg); ok {
			callArgs[i] = sql.Named(na.Name, s)
		} else {
			callArgs[i] = s
		}
	}
	r.events, r.fail = nil, nil
	var err error
	var tx *sql.Tx
	if inTx {
		if tx, err = r.db.BeginTx(ctx, nil); err != nil {
			return nil, err
		}
		defer tx.Rollback()
	}
	r.events, r.fail = nil, fail
	switch {
	case query && tx != nil:
		err = closeRows(tx.QueryContext(ctx, userSQL, callArgs...))
	case query:
		err = closeRows(r.db.QueryContext(ctx, userSQL, callArgs...))
	case tx != nil:
		_, err = tx.ExecContext(ctx, userSQL, callArgs...)
	default:
		_, err = r.db.ExecContext(ctx, userSQL, callArgs...)
	}
	events := r.events
	r.events, r.fail = nil, nil
	out := make([]Statement, 0, len(events))
	for _, e := range events {
		s := Statement{Op: e.op, SQL: e.sql, Failed: e.failed}
		for _, nv := range e.args {
			v := nv.Value
			if str, ok := v.(string); ok && strings.HasPrefix(str, sentinelPrefix) {
				var i int
				if _, perr := fmt.Sscanf(str[len(sentinelPrefix):], "%d", &i); perr == nil && i < len(args) {
					v = args[i]
				}
			}
			s.Args = append(s.Args, v)
		}
		out = append(out, s)
	}
	if err != nil && fail == nil {
		return nil, err
	}
	return out, err
}

func closeRows(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

type recDriver struct{ r *recorder }

func (d recDriver) Open(string) (driver.Conn, error) { return &recConn{r: d.r}, nil }

type recConn struct{ r *recorder }

var (
	_ driver.ExecerContext  = (*recConn)(nil)
	_ driver.QueryerContext = (*recConn)(nil)
	_ driver.ConnBeginTx    = (*recConn)(nil)
)

func (c *recConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fencedtest: the recording driver does not prepare statements")
}
func (c *recConn) Close() error { return nil }
func (c *recConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *recConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return recTx{c.r}, c.r.add(event{op: OpBegin})
}

func (c *recConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.r.add(event{op: OpExec, sql: q, args: args}); err != nil {
		return nil, err
	}
	return driver.RowsAffected(1), nil
}

func (c *recConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.r.add(event{op: OpQuery, sql: q, args: args}); err != nil {
		return nil, err
	}
	return recRows{}, nil
}

type recTx struct{ r *recorder }

func (t recTx) Commit() error   { return t.r.add(event{op: OpCommit}) }
func (t recTx) Rollback() error { return t.r.add(event{op: OpRollback}) }

type recRows struct{}

func (recRows) Columns() []string         { return nil }
func (recRows) Close() error              { return nil }
func (recRows) Next([]driver.Value) error { return io.EOF }
