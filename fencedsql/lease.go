package fencedsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A lease the client knows is lost writes nothing (docs/design.md, G13). The leases of a
// statement are its transaction's (WithLease or WithLeases given to BeginTx) and its own
// context's (given to the statement); once any of them is lost — Lost closed, or Err not nil,
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

// lostCauseAll returns why the first lost one of leases can no longer be trusted, or
// nil while all are held.
func lostCauseAll(leases []Lease) error {
	for _, l := range leases {
		if cause := lostCause(l); cause != nil {
			return cause
		}
	}
	return nil
}

// lostErr wraps a lost lease's cause so that errors.Is(err, lockclient.ErrLeaseLost).
func lostErr(what string, cause error) error {
	if errors.Is(cause, lockclient.ErrLeaseLost) {
		return fmt.Errorf("fencedsql: %s, its lease was lost: %w", what, cause)
	}
	return fmt.Errorf("fencedsql: %s, its lease was lost: %w: %w", what, lockclient.ErrLeaseLost, cause)
}

// leaseLost reports why one of the transaction's leases can no longer be trusted, or nil.
func (st *txState) leaseLost() error {
	if st == nil {
		return nil
	}
	if cause := lostCauseAll(st.leases); cause != nil {
		return lostErr("transaction rolled back", cause)
	}
	return nil
}

// checkLease refuses a statement one of whose leases — its transaction's or its
// context's — is known lost.
func (c *conn) checkLease(ctx context.Context) error {
	if c.tx != nil {
		if cause := lostCauseAll(c.tx.leases); cause != nil {
			return lostErr("statement not sent", cause)
		}
	}
	if b, ok := bindingFrom(ctx); ok {
		if cause := lostCauseAll(b.leases); cause != nil {
			return lostErr("statement not sent", cause)
		}
	}
	return nil
}
