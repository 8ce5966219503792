package fencedsql

import (
	"context"
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// checkQueryErr is the error of a query the wrapper runs to check something before it
// sends a statement (the session check, the connection's name resolution, a guard's
// verdict, the column check, the schema lint, the side doors, the primary key …)
// that failed with err: a *SchemaError naming table ("" for the session) and what was
// asked (problem) — unless the query was cut (cutCheck), which says nothing about the
// schema, nor about a mock driver: then a *CheckCutError (red-team rt44f F1: a
// caller's deadline that passed during the session check came back as "the session
// check query failed (under a mock driver such as go-sqlmock …): driver: bad
// connection", errors.Is ErrSchema and not context.DeadlineExceeded). d is the pool's
// dialect. A check query that waited for a lock the server then did not grant (lockWait:
// SQLite's SQLITE_BUSY or SQLITE_LOCKED, PostgreSQL's lock_timeout or deadlock, MySQL's
// lock wait timeout or deadlock) is cut too (red-team rt65b F1).
func checkQueryErr(ctx context.Context, d dialect.Dialect, table, problem string, err error) error {
	if cut := cutCheck(ctx, d, table, problem, err); cut != nil {
		return cut
	}
	return &SchemaError{Table: table, Problem: problem + mockHint, Err: err}
}

// cutCheck is the one rule of every check path (checkQueryErr's lazy checks, and
// firstReadErr's first-connection reads): a check query that failed with err is cut —
// a *CheckCutError naming table and problem — when ctx ended or the connection was
// lost under it (connLost with the pool's dialect d: a driver's own lost-connection
// errors, go-sql-driver/mysql's ErrInvalidConn or PostgreSQL's FATAL 57P01 of a
// restart or a failover, count; red-team rt53b F1) or the server interrupted its
// query on a session that goes on (interrupted: a statement timeout, KILL QUERY) or
// the session had lost the prepared statement the driver sent for it (statementLost,
// where queryStrings could not send it again: red-team rt57a F2) or the query waited
// for a lock the server did not grant (lockWait: a busy SQLite database, a lock or
// deadlock timeout; red-team rt65b F1); nil otherwise. A cut check is not recorded as
// done: the next statement runs it again.
func cutCheck(ctx context.Context, d dialect.Dialect, table, problem string, err error) error {
	if cerr := ctx.Err(); cerr != nil || connLost(d, err) || interrupted(d, err) || statementLost(d, err) || lockWait(d, err) {
		return &CheckCutError{Table: table, Problem: problem, Err: err, Context: cerr}
	}
	return nil
}

// CheckCutError is a check the wrapper runs before sending a statement (its session
// check, a guarded table's schema check, …) that could not complete because the
// statement's context ended, the connection failed under its query, the server
// interrupted its query (a statement timeout, a cancel request, KILL QUERY), or the
// query waited for a lock the server did not grant (a busy or locked SQLite database, a
// lock wait timeout, a deadlock: retry once the other transaction ended). Nothing of the
// statement was sent: outside a transaction CommitOutcome says NotCommitted; the
// connection is left to the driver's own verdict (a driver.ErrBadConn makes
// database/sql discard it and, outside a transaction, retry the statement on another
// connection). errors.Is holds for the driver's error and for the context's error
// (context.DeadlineExceeded, context.Canceled) when the context ended — also when the
// driver reported only the connection it closed at the deadline — and not for
// ErrSchema: the schema was not judged.
type CheckCutError struct {
	Table   string // the guarded table the check was about, "" for the session
	Problem string // what was asked, e.g. "the session check query failed"
	Err     error  // the driver's error
	Context error  // the context's error, nil when it had not ended
}

func (e *CheckCutError) Error() string {
	msg := "fencedsql: " + e.Problem
	if e.Table != "" {
		msg = "fencedsql: guarded table " + e.Table + ": " + e.Problem
	}
	msg += ": " + e.Err.Error()
	if e.Context != nil && !errors.Is(e.Err, e.Context) {
		msg += " (" + e.Context.Error() + ")"
	}
	return msg + "; nothing of the statement was sent"
}

// Unwrap returns the driver's error and the context's.
func (e *CheckCutError) Unwrap() []error {
	if e.Context != nil {
		return []error{e.Err, e.Context}
	}
	return []error{e.Err}
}

// interrupted reports whether dialect d reads err as a statement the server cancelled
// on a session that goes on (dialect.ErrorInterrupted: PostgreSQL 57014, MySQL 1317,
// MariaDB 1969, MySQL 3024): a check query cut so says nothing about the schema.
func interrupted(d dialect.Dialect, err error) bool {
	return d != nil && err != nil && d.Classify(err).Kind == dialect.ErrorInterrupted
}

// lockWait reports whether dialect d reads err as a lock wait the server ended without
// the lock (dialect.ErrorLockWait: SQLite's SQLITE_BUSY and SQLITE_LOCKED, PostgreSQL
// 55P03 and 40P01, MySQL 1205 and 1213): another transaction held what the check query
// reads, which says nothing about the schema (red-team rt65b F1: a busy SQLite
// database came back as ErrSchema with the go-sqlmock hint).
func lockWait(d dialect.Dialect, err error) bool {
	return d != nil && err != nil && d.Classify(err).Kind == dialect.ErrorLockWait
}
