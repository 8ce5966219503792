package fencedsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A lease the client knows is lost writes nothing (docs/design.md, G13). The lease of a
// statement is its transaction's (WithLease given to BeginTx) and its own context's
// (WithLease given to the statement); once either is lost — Lost closed, or Err not nil,
// which also covers a lease past its local deadline and the leases of a closed Client —
// BeginTx, every statement (reads included: their results would feed writes the holder
// may no longer make) and Commit fail with an error wrapping lockclient.ErrLeaseLost,
// before anything is sent. The check is a channel poll and a mutex, no round trip.

// lostCause returns why lease can no longer be trusted, or nil while it is held.
func lostCause(lease Lease) error {
	if lease == nil {
		return nil
	}
	// Err is checked first: a lease past its local deadline is lost even if its
	// watchdog has not closed Lost yet.
	if cause := lease.Err(); cause != nil {
		return cause
	}
	select {
	case <-lease.Lost():
		return errors.New("lease lost")
	default:
		return nil
	}
}

// lostErr wraps a lost lease's cause so that errors.Is(err, lockclient.ErrLeaseLost).
func lostErr(what string, cause error) error {
	if errors.Is(cause, lockclient.ErrLeaseLost) {
		return fmt.Errorf("fencedsql: %s, its lease was lost: %w", what, cause)
	}
	return fmt.Errorf("fencedsql: %s, its lease was lost: %w: %w", what, lockclient.ErrLeaseLost, cause)
}

// leaseLost reports why the transaction's lease can no longer be trusted, or nil.
func (st *txState) leaseLost() error {
	if st == nil {
		return nil
	}
	if cause := lostCause(st.lease); cause != nil {
		return lostErr("transaction rolled back", cause)
	}
	return nil
}

// checkLease refuses a statement whose lease — its transaction's or its context's — is
// known lost.
func (c *conn) checkLease(ctx context.Context) error {
	if c.tx != nil {
		if cause := lostCause(c.tx.lease); cause != nil {
			return lostErr("statement not sent", cause)
		}
	}
	if b, ok := bindingFrom(ctx); ok {
		if cause := lostCause(b.lease); cause != nil {
			return lostErr("statement not sent", cause)
		}
	}
	return nil
}
