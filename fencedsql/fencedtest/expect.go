// The Mock's expectations: BEGIN/COMMIT/ROLLBACK and fenced statements, replayed onto sqlmock.

package fencedtest

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/fencedsql/fencedsql/fencedsql"
)

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
