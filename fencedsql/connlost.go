package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// connLost is the wrapper's one rule for "the connection was lost, the server ended
// the session, or the context ended, while a request was in flight": the server may
// have done the work without the reply arriving, and the error says nothing about
// the schema. Every place that asks it uses this function: a check query that failed
// so is cut (cutCheck: *CheckCutError, never *SchemaError), a statement or COMMIT that
// failed so has an Unknown outcome (classifyOutcome, withOutcome), and a failed
// one-statement DELETE is not retried as two (fenceWithdrawn).
//
// It counts the errors every driver shares (isTransport), and those dialect d's
// driver reports a lost connection with (dialect.ConnLossJudge: go-sql-driver/mysql's
// ErrInvalidConn, pgx's FATAL 57P01 admin_shutdown and closed connection; red-team
// rt53b F1: they came back as ErrSchema with the go-sqlmock hint after a failover);
// with d nil (CommitOutcome), those of every registered dialect.
func connLost(d dialect.Dialect, err error) bool {
	if err == nil {
		return false
	}
	if isTransport(err) {
		return true
	}
	if d != nil {
		j, ok := d.(dialect.ConnLossJudge)
		return ok && j.ConnectionLost(err)
	}
	for _, rd := range dialect.Registered() {
		if j, ok := rd.(dialect.ConnLossJudge); ok && j.ConnectionLost(err) {
			return true
		}
	}
	return false
}

// isTransport is connLost's part that holds for every driver: a lost or unusable
// connection, or a context that ended while a request was in flight. driver.ErrBadConn
// counts, although drivers promise it only when nothing was sent: a driver that breaks
// the promise would turn a commit into "not committed". Use connLost, which adds the
// dialect's own errors.
func isTransport(err error) bool {
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
}
