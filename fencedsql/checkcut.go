package fencedsql

import (
	"context"
	"errors"
)

// checkQueryErr is the error of a query the wrapper runs to check something before it
// sends a statement (the session check, the connection's name resolution, a guard's
// verdict, the column check …) that failed with err: a *SchemaError naming table
// ("" for the session) and what was asked (problem) — unless the query failed
// because ctx ended or the connection was lost (isTransport), which says nothing
// about the schema, nor about a mock driver: then a *CheckCutError (red-team rt44f
// F1: a caller's deadline that passed during the session check came back as
// "the session check query failed (under a mock driver such as go-sqlmock …): driver:
// bad connection", errors.Is ErrSchema and not context.DeadlineExceeded).
func checkQueryErr(ctx context.Context, table, problem string, err error) error {
	if cerr := ctx.Err(); cerr != nil || isTransport(err) {
		return &CheckCutError{Table: table, Problem: problem, Err: err, Context: cerr}
	}
	return &SchemaError{Table: table, Problem: problem + mockHint, Err: err}
}

// CheckCutError is a check the wrapper runs before sending a statement (its session
// check, a guarded table's schema check, …) that could not complete because the
// statement's context ended or the connection failed under its query. Nothing of the
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
