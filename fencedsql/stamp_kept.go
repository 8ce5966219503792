package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// A two-statement write or read (a DELETE's fencing UPDATE, then the DELETE; a claim,
// then the locking read) is not one statement: when the second fails inside the
// caller's transaction — a user's BEFORE DELETE trigger raising an error, a foreign
// key, a syntax the database rejects in the caller's read — MySQL/MariaDB and SQLite
// undo only the failed statement, and the first one's stamp (the caller's token, the
// version advanced) stays in the transaction. A caller that handles the error and
// commits would store a row stamped by a statement that failed. Undoing the stamp
// exactly would take a savepoint around every two-statement write, two more round trips
// on the path that succeeds; instead the wrapper marks the transaction (breakTx) when
// the second statement fails after the first changed rows (or the driver cannot say
// how many): Commit then rolls it back and returns NotCommitted, and the failed
// statement's error says so. A database that aborts the whole transaction on any error
// (dialect.TxAborter: PostgreSQL) needs none of this and is left as it is.

// stampKeptError is the error of the second statement of a two-statement write or read
// that failed, inside the caller's transaction, after the first stamped rows: the
// statement's own error (errors.Is and errors.As find it, and the package's typed
// errors it maps to), saying that the transaction can only roll back.
type stampKeptError struct{ err error }

func (e *stampKeptError) Error() string {
	return e.err.Error() + " (fencedsql: the transaction can no longer commit: the fencing UPDATE that ran before the failed statement stamped rows that only a rollback undoes; Commit rolls back)"
}

func (e *stampKeptError) Unwrap() error { return e.err }

// stampKept judges err, the error of the second statement of a two-statement write or
// read that ran in the caller's transaction after its first statement changed stamped
// rows (-1: the driver cannot say how many). Unless the database aborts the transaction
// on any error itself (dialect.TxAborter) or nothing was stamped, the transaction is
// marked so that it can only roll back (breakTx), and the error returned says so.
func (c *conn) stampKept(stamped int64, err error) error {
	if err == nil || c.tx == nil || stamped == 0 {
		return err
	}
	var kept *stampKeptError
	if errors.As(err, &kept) || errors.Is(err, driver.ErrBadConn) {
		c.breakTx(err)
		return err
	}
	if c.serverAbortedTx(err) {
		return err
	}
	kept = &stampKeptError{err: err}
	c.breakTx(kept)
	return kept
}

// serverAbortedTx reports whether err, a statement's failure in the caller's
// transaction, left that transaction aborted by the database itself, so that only a
// rollback — the whole transaction's, or the caller's ROLLBACK TO SAVEPOINT, which
// undoes the wrapper's earlier statements too — continues it: the database aborts
// the transaction on any error (dialect.TxAborter) and answered this one. A statement
// never sent (its context ended first, a check of the wrapper's failed) leaves the
// transaction live (red-team rt20m F1). Every answer counts, a cancelled statement's
// (57014) too (red-team rt56c F1).
func (c *conn) serverAbortedTx(err error) bool {
	a, ok := c.core.dialect.(dialect.TxAborter)
	return ok && a.AbortsTxOnError() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && answeredByServer(c.core.dialect, err)
}

// breakTxUnlessAborted marks the open transaction broken with err (breakTx), the
// failure of a statement the wrapper ran after a claim of its own, unless the
// database aborted the transaction on it (serverAbortedTx): then the caller's
// ROLLBACK TO SAVEPOINT undoes the claim with the failed statement, and the
// transaction may go on and commit (red-team rt56c F1's class, for the statements of
// a claim of an absent key: the probe, the recorder, the claim run again).
func (c *conn) breakTxUnlessAborted(err error) {
	if !c.serverAbortedTx(err) {
		c.breakTx(err)
	}
}

// stampFailed judges err, the failure of the fencing UPDATE of a two-statement write
// in the caller's transaction, already mapped (mapErr): where a failed statement may
// keep its earlier changes (dialect.PartialFailer) and the failure is not the fence's
// own refusal, which aborts the statement whole, some rows may stay stamped, and the
// transaction is marked as stampKept does.
func (c *conn) stampFailed(err error) error {
	p, ok := c.core.dialect.(dialect.PartialFailer)
	if !ok || !p.FailedStatementMayKeepChanges() || errors.Is(err, ErrFenced) || errors.Is(err, ErrBelowFloor) || errors.Is(err, ErrVersionConflict) || errors.Is(err, ErrUnsupported) {
		return err
	}
	return c.stampKept(-1, err)
}
