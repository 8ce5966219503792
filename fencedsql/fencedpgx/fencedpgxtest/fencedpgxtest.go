// Package fencedpgxtest helps unit-test business code that writes through fencedpgx,
// with a pgx test double (DB, in the style of pgxmock) underneath the wrapper.
//
// Business code writes its own SQL; fencedpgx sends a rewritten statement that carries
// the fencing token. With fencedpgxtest a test states the business code's SQL and the
// token, and the expectation is derived by running the statement through the real
// wrapper once, over a recording double:
//
//	db, mock := fencedpgxtest.New(t, fencedsql.Guard("accounts"))
//	mock.ExpectBegin()
//	mock.ExpectFencedExec(`UPDATE accounts SET balance = balance - $1 WHERE id = $2`, 7, 30, 42)
//	mock.ExpectCommit()
//	err := Debit(fencedsql.WithToken(ctx, 7), db, 42, 30)
//
// ExpectFencedRejection makes the database answer with PostgreSQL's fencing error (a NOT
// NULL violation on the token column), so the code under test sees fencedsql.ErrFenced
// exactly as against a real database. Between ExpectBegin and ExpectCommit/Rollback a
// statement is expected as the wrapper sends it inside the caller's transaction;
// outside one, as it sends it alone (a DELETE then with the wrapper's own BEGIN and
// COMMIT around its two statements).
//
// Why not pgxmock: github.com/pashagolub/pgxmock/v4 v4.9.0 does not compile against pgx
// v5.12 (pgx.Rows gained TypeMap and pgx.BatchResults gained Tx); DB offers the same
// kind of expectations (exact SQL and arguments, in order) for fencedpgx.Wrap, and
// fencedpgx.Wrap accepts pgxmock's mocks unchanged once pgxmock supports this pgx.
package fencedpgxtest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
)

// TB is the part of testing.TB that fencedpgxtest uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Mock is a DB with expectations stated in terms of the business code's SQL.
// ExpectBegin, ExpectCommit and ExpectRollback also track whether later fenced
// expectations are inside a transaction.
type Mock struct {
	*DB
	t    TB
	rec  *recorder
	mu   sync.Mutex
	inTx bool
}

// New returns a fenced pool over a new DB with the given options (typically
// fencedsql.Guard), the schema check off, and its Mock. When the test ends the mock's
// expectations must have been met.
func New(t TB, opts ...fencedsql.Option) (*fencedpgx.Pool, *Mock) {
	t.Helper()
	m, all := newMock(t, opts)
	db, err := fencedpgx.Wrap(m.DB, all...)
	if err != nil {
		t.Fatalf("fencedpgxtest.New: %v", err)
	}
	return db, m
}

// NewConn is New for code that takes a *fencedpgx.Conn (Prepare and Deallocate).
func NewConn(t TB, opts ...fencedsql.Option) (*fencedpgx.Conn, *Mock) {
	t.Helper()
	m, all := newMock(t, opts)
	c, err := fencedpgx.WrapConn(m.DB, all...)
	if err != nil {
		t.Fatalf("fencedpgxtest.NewConn: %v", err)
	}
	return c, m
}

func newMock(t TB, opts []fencedsql.Option) (*Mock, []fencedsql.Option) {
	all := append([]fencedsql.Option{fencedsql.WithSchemaCheck(false)}, opts...)
	rec, err := newRecorder(all)
	if err != nil {
		t.Fatalf("fencedpgxtest: %v", err)
	}
	m := &Mock{DB: NewDB(), t: t, rec: rec}
	t.Cleanup(func() {
		if err := m.ExpectationsWereMet(); err != nil {
			t.Fatalf("%v", err)
		}
	})
	return m, all
}

// ExpectBegin expects a transaction to begin; fenced expectations up to ExpectCommit or
// ExpectRollback are for statements inside it.
func (m *Mock) ExpectBegin() *Expectation {
	m.setTx(true)
	return m.DB.ExpectBegin()
}

// ExpectCommit expects the transaction to commit.
func (m *Mock) ExpectCommit() *Expectation {
	m.setTx(false)
	return m.DB.ExpectCommit()
}

// ExpectRollback expects the transaction to roll back.
func (m *Mock) ExpectRollback() *Expectation {
	m.setTx(false)
	return m.DB.ExpectRollback()
}

func (m *Mock) setTx(in bool) {
	m.mu.Lock()
	m.inTx = in
	m.mu.Unlock()
}

func (m *Mock) txOpen() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inTx
}

// ExpectFencedExec expects what the wrapper sends for userSQL executed (Exec) with
// token and args, and returns the expectation of the statement whose result the code
// sees (set its WillReturnResult; the default is "UPDATE 1").
func (m *Mock) ExpectFencedExec(userSQL string, token uint64, args ...any) *Expectation {
	m.t.Helper()
	return m.expect(fencedsql.WithToken(context.Background(), token), false, userSQL, args)
}

// ExpectFencedQuery is ExpectFencedExec for Query/QueryRow (… RETURNING, claimed
// reads); set the rows with WillReturnRows.
func (m *Mock) ExpectFencedQuery(userSQL string, token uint64, args ...any) *Expectation {
	m.t.Helper()
	return m.expect(fencedsql.WithToken(context.Background(), token), true, userSQL, args)
}

func (m *Mock) expect(ctx context.Context, query bool, userSQL string, args []any) *Expectation {
	m.t.Helper()
	stmts, err := m.rec.run(ctx, m.txOpen(), query, userSQL, args, nil)
	if err != nil {
		m.t.Fatalf("fencedpgxtest: the wrapper refuses %q, so nothing would reach the database: %v", userSQL, err)
	}
	return m.replay(stmts, nil)
}

// ExpectFencedRejection expects userSQL (run with Exec) with token and args and makes
// the database reject it as it rejects a stale token: the code sees ErrFenced.
func (m *Mock) ExpectFencedRejection(userSQL string, token uint64, args ...any) {
	m.t.Helper()
	m.reject(false, userSQL, token, args)
}

// ExpectFencedQueryRejection is ExpectFencedRejection for Query/QueryRow.
func (m *Mock) ExpectFencedQueryRejection(userSQL string, token uint64, args ...any) {
	m.t.Helper()
	m.reject(true, userSQL, token, args)
}

var tokenCase = regexp.MustCompile(`CASE WHEN "((?:[^"]|"")+)" <`)

func (m *Mock) reject(query bool, userSQL string, token uint64, args []any) {
	m.t.Helper()
	ctx := fencedsql.WithToken(context.Background(), token)
	stmts, err := m.rec.run(ctx, m.txOpen(), query, userSQL, args, nil)
	if err != nil {
		m.t.Fatalf("fencedpgxtest: the wrapper refuses %q: %v", userSQL, err)
	}
	col := schema.DefaultTokenColumn
	for _, s := range stmts {
		if mm := tokenCase.FindStringSubmatch(s.SQL); mm != nil {
			col = mm[1]
			break
		}
	}
	// The probe names no table: the wrapper maps a NOT NULL only where it is of the
	// guarded table, whose name the refusal then gives.
	probe := FencingError("", col)
	failed, err := m.rec.run(ctx, m.txOpen(), query, userSQL, args, probe)
	var fe *fencedsql.FencedError
	if !errors.As(err, &fe) {
		m.t.Fatalf("fencedpgxtest: %q is not a fenced write the database can reject (%v)", userSQL, err)
	}
	m.replay(failed, FencingError(fe.Table, col))
}

// FencingError is the error PostgreSQL raises when a fenced write meets a newer token:
// a NOT NULL violation (23502) on the token column col of table.
func FencingError(table, col string) error {
	return &pgconn.PgError{
		Severity: "ERROR", Code: "23502",
		Message:    fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", col, table),
		TableName:  table,
		ColumnName: col,
	}
}

// Statements returns what the wrapper sends for userSQL run with args under ctx (which
// carries the token, and optionally an expected version): inside a transaction when
// inTx, through Query when query, else Exec. An error is the wrapper's refusal.
func (m *Mock) Statements(ctx context.Context, inTx, query bool, userSQL string, args ...any) ([]Statement, error) {
	return m.rec.run(ctx, inTx, query, userSQL, args, nil)
}

// replay turns recorded statements into expectations; the one that failed in the
// recording fails with rej. It returns the last Exec or Query expectation.
func (m *Mock) replay(stmts []Statement, rej error) *Expectation {
	var last *Expectation
	for _, s := range stmts {
		switch s.Op {
		case OpBegin:
			m.DB.ExpectBegin()
		case OpCommit:
			m.DB.ExpectCommit()
		case OpRollback:
			m.DB.ExpectRollback()
		case OpExec:
			last = m.DB.ExpectExec(s.SQL).WithArgs(s.Args...)
		case OpQuery:
			last = m.DB.ExpectQuery(s.SQL).WithArgs(s.Args...)
		}
		if s.Failed && last != nil {
			last.WillReturnError(rej)
		}
	}
	return last
}

// Op is the kind of a call the wrapper makes.
type Op int

// The calls a Statement can record.
const (
	OpBegin Op = iota
	OpExec
	OpQuery
	OpCommit
	OpRollback
)

func (o Op) String() string {
	return [...]string{"BEGIN", "EXEC", "QUERY", "COMMIT", "ROLLBACK"}[o]
}

// Statement is one call the wrapper made.
type Statement struct {
	Op     Op
	SQL    string
	Args   []any // in placeholder order: the user's values as given, the token and version as int64
	Failed bool  // answered with the injected error
}

func (s Statement) String() string {
	if s.Op == OpExec || s.Op == OpQuery {
		return fmt.Sprintf("%v %s %v", s.Op, s.SQL, s.Args)
	}
	return s.Op.String()
}

// recorder is a fenced pool over a double that records what the wrapper sends.
type recorder struct {
	mu     sync.Mutex
	pool   *fencedpgx.Pool
	events []Statement
	fail   error
}

func newRecorder(opts []fencedsql.Option) (*recorder, error) {
	r := &recorder{}
	p, err := fencedpgx.Wrap(recDB{r}, opts...)
	if err != nil {
		return nil, err
	}
	// The pool's first-use work (the catalog reads of what is guarded) runs now, so
	// that no recording holds its queries: the mock's pool answers them on its own
	// (DB.next).
	_ = p.Ping(context.Background())
	r.events = nil
	r.pool = p
	return r, nil
}

func (r *recorder) add(s Statement) error {
	if (s.Op == OpExec || s.Op == OpQuery) && r.fail != nil {
		s.Failed = true
		r.events = append(r.events, s)
		err := r.fail
		r.fail = nil
		return err
	}
	r.events = append(r.events, s)
	return nil
}

func (r *recorder) run(ctx context.Context, inTx, query bool, userSQL string, args []any, fail error) ([]Statement, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events, r.fail = nil, nil
	var x interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
		Query(context.Context, string, ...any) (pgx.Rows, error)
	} = r.pool
	var tx pgx.Tx
	if inTx {
		var err error
		if tx, err = r.pool.Begin(ctx); err != nil {
			return nil, err
		}
		x = tx
		r.events = nil
	}
	r.fail = fail
	var err error
	if query {
		rows, qerr := x.Query(ctx, userSQL, args...)
		if qerr == nil {
			for rows.Next() {
			}
			rows.Close()
			qerr = rows.Err()
		}
		err = qerr
	} else {
		_, err = x.Exec(ctx, userSQL, args...)
	}
	out := r.events
	if tx != nil {
		_ = tx.Rollback(ctx)
	}
	r.events, r.fail = nil, nil
	return out, err
}

// recDB records calls and answers them with success (or the injected error).
type recDB struct{ r *recorder }

func (d recDB) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := d.r.add(Statement{Op: OpExec, SQL: sql, Args: args}); err != nil {
		return pgconn.CommandTag{}, err
	}
	return pgconn.NewCommandTag("UPDATE 1"), nil
}

func (d recDB) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	if isFirstUse(KindQuery, sql) {
		// The wrapper's catalog and session reads: answered as the mock's pool answers
		// them when no one expects them (DB.next), and not recorded.
		err := &errFirstUse{sql: sql}
		return &Rows{err: err}, err
	}
	if err := d.r.add(Statement{Op: OpQuery, SQL: sql, Args: args}); err != nil {
		return &Rows{err: err}, err
	}
	return &Rows{i: -1}, nil
}

func (d recDB) SendBatch(context.Context, *pgx.Batch) pgx.BatchResults {
	return &batchResults{err: errors.New("fencedpgxtest: batches are not recorded")}
}

func (d recDB) CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error) {
	return 0, errors.New("fencedpgxtest: CopyFrom is not recorded")
}

func (d recDB) BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error) {
	_ = d.r.add(Statement{Op: OpBegin})
	return &recTx{d: d}, nil
}

type recTx struct {
	d recDB
	pgx.Tx
}

func (t *recTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.d.Exec(ctx, sql, args...)
}
func (t *recTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.d.Query(ctx, sql, args...)
}
func (t *recTx) Commit(context.Context) error {
	_ = t.d.r.add(Statement{Op: OpCommit})
	return nil
}
func (t *recTx) Rollback(context.Context) error {
	_ = t.d.r.add(Statement{Op: OpRollback})
	return nil
}
