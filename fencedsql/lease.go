package fencedsql

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A lease the client knows is lost writes nothing (docs/design.md, G13). The leases of a
// statement are its transaction's (WithLease or WithLeases given to BeginTx) and its own
// context's (given to the statement); once any of them is lost — Lost closed, or Err not nil,
// which also covers a lease past its local deadline and the leases of a closed Client —
// BeginTx, every statement (reads included: their results would feed writes the holder
// may no longer make) and Commit fail with an error wrapping lockclient.ErrLeaseLost,
// before anything is sent. The check is a channel poll and a mutex, no round trip.

// A lease bound to a context is not passed on to a lock service called with it.
var _ lockclient.CallerOnlyKey = leaseKey

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
// context's — is known lost. Inside a transaction the statement's own leases join the
// transaction's (a transaction begun without a lease, whose statements carry theirs),
// so that Commit checks them too; and a refusal breaks the transaction: its Commit
// rolls back, whatever the caller does with the statement's error (the statements
// before it must not commit without the one refused). A statement of a transaction the
// server already rolled back is refused too (txEnded), and so is one whose leases —
// its own, or its own and its transaction's — come from two lock services
// (sameService), which breaks its transaction too. Last, every lease with a token below
// the one the statement carries (another lease's, or a bare token: the transaction's,
// or laid over the statement's leases) must have been confirmed at its lock service
// after that token came into existence (leaseproof.go): once per binding outside a
// transaction, and in one whenever its set of leases grew or the token carried rose;
// a failure breaks the transaction too.
func (c *conn) checkLease(ctx context.Context) error {
	if err := c.txEnded(); err != nil {
		return err // the server rolled the transaction back: nothing is sent
	}
	b, bound := bindingFrom(ctx)
	if err := c.sameService(b, bound); err != nil {
		c.breakTx(err)
		return err
	}
	if err := c.otherBinding(b, bound); err != nil {
		return err
	}
	if c.tx != nil && bound {
		for _, l := range b.leases {
			if !hasLease(c.tx.leases, l) {
				c.tx.leases = append(c.tx.leases, l)
			}
		}
		c.tx.joined = max(c.tx.joined, b.leaseTok)
		if c.tx.service == "" && b.service != "" {
			c.tx.service, c.tx.serviceTok = b.service, b.leaseTok
		}
	}
	var cause error
	if c.tx != nil {
		cause = lostCauseAll(c.tx.leases)
	} else if bound {
		cause = lostCauseAll(b.leases)
	}
	if cause != nil {
		err := lostErr("statement not sent", cause)
		c.breakTx(err)
		return err
	}
	// Leases of several tokens: the smaller ones confirmed at their lock service
	// after the largest was granted, once per binding or set of a transaction's
	// leases (leaseproof.go; red-team rt45f F2).
	if c.tx == nil {
		if bound {
			return b.prove(ctx, "statement not sent")
		}
		return nil
	}
	// In a transaction, the token the statement carries (statementToken: the
	// transaction's, raised by the joining leases, or begun under a bare token; or
	// the statement's own) is the one every lease of the transaction below it must
	// have been confirmed against (red-team rt46e F1: a bare token the transaction was
	// begun with raised a joining stale lease unconfirmed). Confirmed again when the
	// set of leases grew or the token rose above the one last confirmed against; a
	// confirmation against a larger token covers a smaller one (any later holder of a
	// lock then confirmed gets a token above the larger).
	tok, _ := c.statementToken(ctx)
	carried := tok
	if !c.tx.bound && len(b.leases) == 0 {
		// A transaction begun without a binding: a statement's bare token (or none)
		// writes under itself alone, no lease of the transaction is raised to it.
		tok = 0
	}
	if len(c.tx.leases) != c.tx.provenN || tok > c.tx.provenTok {
		if err := proveLeases(ctx, "statement not sent", c.tx.leases, tok); err != nil {
			c.breakTx(err)
			return err
		}
		c.tx.provenN, c.tx.provenTok = len(c.tx.leases), tok // all of leases, against tok
	}
	// A transaction whose statements carry two tokens tells the database the larger
	// before the statement is sent (txtoken.go: the deletions it makes are tombstoned
	// at no less).
	c.noteTxToken(carried)
	return nil
}

// otherBinding judges a statement whose context binds another token than the
// transaction open on this connection (database/sql sends the statements of a
// *sql.Conn and of a *sql.Tx open on it through the same driver connection, so the
// statement may be either's):
//   - a bare token (WithToken) is refused before anything is sent: written under the
//     transaction's token it would be stored over rows its own token may not write (a
//     token-1 write over a row of token 3 because the open transaction holds 4), and
//     there is no lease to hold it to. The transaction is not broken. A token laid
//     over leases (WithToken(WithLease(ctx, l), t)) above both the leases' largest
//     token and the transaction's is such a bare token too (red-team rt33a F1: it
//     raised the transaction to a token no lease held was granted); below, the
//     statement runs with the transaction's token, raised by its leases as follows.
//   - leases (WithLease, WithLeases: a lock taken during the transaction) join the
//     transaction's, as in WithLeases: every later statement and the Commit check them,
//     and the transaction carries the largest token from then on (raised here to the
//     joining leases' largest token, never to a token WithToken laid over them, for its
//     later statements), which the rows of every lock held accept.
//   - leases with no usable token (a nil lease among them: WithLeases) are refused
//     with ErrNoToken: the statement's lock is not held.
//
// A statement binding the transaction's token (or the one it was begun with) is the
// transaction's own; its leases raise the token the same way. A transaction begun
// without a token keeps taking each statement's (statementToken).
func (c *conn) otherBinding(b binding, bound bool) error {
	if c.tx == nil || c.tx.token == 0 || !bound {
		return nil
	}
	own := b.token == c.tx.token || b.token == c.tx.begun
	if !own && b.token == 0 && b.leased() {
		return &NoTokenError{Reason: fmt.Sprintf("the statement's context binds leases with no usable token (a nil lease, or one never granted), the transaction open on this connection token %d", c.tx.token)}
	}
	raised := max(c.tx.token, b.leaseTok)
	if !own && (len(b.leases) == 0 || b.token > raised) {
		return &UnsupportedError{Reason: fmt.Sprintf("the statement's context binds token %d (its leases' largest token %d), the transaction open on this connection token %d: "+
			"run it on the transaction with the transaction's binding (or a lease: WithLease), or on another connection", b.token, b.leaseTok, c.tx.token)}
	}
	c.tx.token = raised
	return nil
}

// hasLease reports whether leases holds l (the same lease value; a lease of a type
// that cannot be compared counts as absent, and is then checked twice).
func hasLease(leases []Lease, l Lease) bool {
	if l == nil || !reflect.TypeOf(l).Comparable() {
		return false
	}
	for _, x := range leases {
		if x == l {
			return true
		}
	}
	return false
}

// sameService refuses a statement whose binding joins leases of two lock services
// (binding.mixed), or whose leases name another lock service than its transaction's
// (red-team rt42e F2, leaseservice.go). It changes nothing: a statement's leases that
// join the transaction give it their service when it had none known (checkLease).
func (c *conn) sameService(b binding, bound bool) error {
	if !bound {
		return nil
	}
	if b.mixed != nil {
		return b.mixed
	}
	if c.tx == nil || b.service == "" {
		return nil
	}
	return otherService(c.tx.service, c.tx.serviceTok, b.service, b.leaseTok)
}
