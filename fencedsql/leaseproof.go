package fencedsql

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Several leases bound together carry the largest of their tokens (WithLeases). On the
// rows of a lock whose lease has a smaller token that is safe only if the lock service
// still held that lease after it granted the largest one: no other holder of the lock
// was granted in between, and any later holder gets a larger token than the largest,
// which the database then fences. The client's own loss detection (Lease.Err, Lost)
// cannot establish it: a lease the service expired, revoked or dropped while its client
// has not noticed (the service's clock ahead, a forced unlock, a failover that lost the
// key — what fencing tokens exist for) still reports held, and its lock may have been
// granted again with a token below the largest (red-team rt45f F2). So before a
// binding's token is first used — at BeginTx, or at the first statement under it — and
// again when a lease joining a transaction changes its set of leases, every lease with
// a smaller token than the largest must be confirmed held by the service in answer to
// a request sent after the largest lease's grant arrived (LeaseConfirmer), or nothing
// is sent.

// LeaseConfirmer is a Lease whose lock service can confirm it still holds it.
// *lockclient.Lease implements it. A binding of several leases with different tokens
// (WithLeases, nested WithLease, a statement's lease joining a transaction) needs every
// lease whose token is below the largest to implement it: a lease that does not is
// refused with an error wrapping ErrUnsupported, nothing sent, since nothing else can
// show that its lock had no other holder before the larger token was granted.
type LeaseConfirmer interface {
	Lease
	// GrantReceived returns the local time the lease's grant arrived from the lock
	// service; the zero time when unknown (the check then measures from its own time).
	GrantReceived() time.Time
	// ConfirmHeldSince returns nil once the lock service confirmed it still holds the
	// lease in answer to a request sent after since, making that request now if no
	// earlier one qualifies; otherwise an error (wrapping lockclient.ErrLeaseLost when
	// the service refused).
	ConfirmHeldSince(ctx context.Context, since time.Time) error
}

var _ LeaseConfirmer = (*lockclient.Lease)(nil)

// leaseProof remembers that a binding's leases were confirmed (proveLeases), so that
// the statements and transactions under one binding confirm them once. It is shared by
// every copy of the binding: made by WithLeases only when the leases' tokens differ.
type leaseProof struct {
	mu   sync.Mutex
	done bool
}

// prove confirms b's leases (proveLeases) unless they were confirmed before, for
// BeginTx and the statements under b outside a transaction; what says what was
// refused.
func (b binding) prove(ctx context.Context, what string) error {
	if b.proof == nil {
		return nil // one lease, or leases of one token: nothing to confirm
	}
	b.proof.mu.Lock()
	defer b.proof.mu.Unlock()
	if b.proof.done {
		return nil
	}
	if err := proveLeases(ctx, what, b.leases); err != nil {
		return err
	}
	b.proof.done = true
	return nil
}

// needsProof reports whether leases carry different tokens, so that a binding of them
// must confirm its smaller ones (proveLeases) before its token is used.
func needsProof(leases []Lease) bool {
	for _, l := range leases[min(1, len(leases)):] {
		if l.Token() != leases[0].Token() {
			return true
		}
	}
	return false
}

// proveLeases confirms that every lease of leases with a token below the largest was
// held at the lock service after the largest lease was granted (LeaseConfirmer: at
// most one round trip per such lease, none when a renewal sent after that grant already
// confirmed it). It refuses with an error wrapping lockclient.ErrLeaseLost when the
// service did not confirm one, and with one wrapping ErrUnsupported when such a lease
// cannot be confirmed (it does not implement LeaseConfirmer).
func proveLeases(ctx context.Context, what string, leases []Lease) error {
	var top Lease
	for _, l := range leases {
		if top == nil || l.Token() > top.Token() {
			top = l
		}
	}
	var since time.Time
	for _, l := range leases {
		if l.Token() >= top.Token() {
			continue
		}
		lc, ok := l.(LeaseConfirmer)
		if !ok {
			return &UnsupportedError{Reason: fmt.Sprintf("%s: the lease of token %d, bound beside the lease of token %d, is a %T, which does not implement fencedsql.LeaseConfirmer: "+
				"nothing shows its lock had no other holder before token %d was granted (bind the leases of several locks only if each can be confirmed at its lock service)",
				what, l.Token(), top.Token(), l, top.Token())}
		}
		if since.IsZero() {
			if tc, ok := top.(LeaseConfirmer); ok {
				since = tc.GrantReceived()
			}
			if since.IsZero() {
				since = time.Now() // top was granted before: its token was read
			}
		}
		if err := lc.ConfirmHeldSince(ctx, since); err != nil {
			return fmt.Errorf("fencedsql: %s: the lock service did not confirm the lease of token %d still held after the lease of token %d, whose token the work carries, was granted: %w: %w",
				what, l.Token(), top.Token(), lockclient.ErrLeaseLost, err)
		}
	}
	return nil
}
