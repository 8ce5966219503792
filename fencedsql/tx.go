package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// tx wraps a driver transaction. Commit refuses when one of the bound leases was lost:
// the transaction is rolled back and Commit returns an error wrapping
// lockclient.ErrLeaseLost. This is defence in depth; the fencing token is what makes a
// late write safe. Every error of Commit wraps ErrNotCommitted or ErrCommitUnknown
// (see CommitOutcome).
type tx struct {
	raw driver.Tx
	c   *conn
	st  *txState
	ctx context.Context // BeginTx's: the wrapper's COMMIT and ROLLBACK statements run under it (endTx)
}

// end unbinds the transaction from its connection, and re-arms the checks made under
// a SET the end of the transaction reverts (conn.sessionReverted).
func (t *tx) end() {
	if t.c.tx == t.st {
		t.c.tx = nil
	}
	t.c.sessionReverted(t.st)
}

// Commit implements driver.Tx.
func (t *tx) Commit() error {
	defer t.end()
	// The refusals roll back without sending COMMIT: not committed, even if the
	// rollback itself fails (the server rolls back a transaction whose connection ends).
	// A transaction the server already rolled back (a deadlock victim) gets only the
	// ROLLBACK: a COMMIT would answer success for nothing.
	if err := t.st.ended; err != nil {
		_ = t.c.endTx(t.ctx, t.raw, false)
		if err.outcome() != NotCommitted { // a dynamic statement left it: committed or not
			return withOutcomeAs(fmt.Errorf("fencedsql: COMMIT not sent: %w", err), err.outcome())
		}
		return withOutcomeAs(fmt.Errorf("fencedsql: transaction not committed: %w", err), NotCommitted)
	}
	if err := t.st.leaseLost(); err != nil {
		_ = t.c.endTx(t.ctx, t.raw, false)
		return withOutcomeAs(err, NotCommitted)
	}
	if err := t.st.broken; err != nil {
		_ = t.c.endTx(t.ctx, t.raw, false)
		return withOutcomeAs(fmt.Errorf("fencedsql: transaction rolled back: %w", err), NotCommitted)
	}
	// Deferred triggers run at COMMIT and may delete rows: the transaction's token is
	// recorded before it (txtoken.go).
	if err := t.c.recordTxToken(t.ctx, nil); err != nil {
		_ = t.c.endTx(t.ctx, t.raw, false)
		return withOutcomeAs(fmt.Errorf("fencedsql: transaction rolled back: %w", err), NotCommitted)
	}
	// COMMIT was sent: an error the wrapper cannot judge is Unknown (ErrCommitUnknown).
	err := t.c.core.mapPassErr(nil, t.c.endTx(t.ctx, t.raw, true))
	return withOutcomeAs(err, classifyOutcome(t.c.core.dialect, err))
}

// Rollback implements driver.Tx. A transaction the server already rolled back (txState.
// ended) is rolled back: the ROLLBACK is still sent, but its error is not the caller's
// (SQLite answers "cannot rollback - no transaction is active"), unless the connection
// is broken (driver.ErrBadConn: database/sql then discards it). One a dynamic statement
// left (the server may have committed it) returns that error: the ROLLBACK undid
// nothing, and the writes' outcome is Unknown (CommitOutcome).
func (t *tx) Rollback() error {
	defer t.end()
	err := t.c.endTx(t.ctx, t.raw, false)
	if t.st.ended != nil && !errors.Is(err, driver.ErrBadConn) {
		if o := t.st.ended.outcome(); o != NotCommitted {
			return withOutcomeAs(fmt.Errorf("fencedsql: nothing rolled back: %w", t.st.ended), o)
		}
		return nil
	}
	return err
}
