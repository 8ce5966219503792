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
// granted again with a token below the largest (red-team rt45f F2). The same holds for
// a larger token that is no lease: a bare token (WithToken) a transaction was begun
// under, or laid over the leases (red-team rt46e F1). So before a binding's token is
// first used — at BeginTx, or at the first statement under it — and again when a lease
// joining a transaction changes its set of leases or the token a statement carries
// rises, every lease with a smaller token than the one carried must be confirmed held
// by the service in answer to a request sent after that token came into existence
// (LeaseConfirmer): after the grant of the lease carrying it arrived, or after now for
// a bare token; otherwise nothing is sent.

// LeaseConfirmer is a Lease whose lock service can confirm it still holds it.
// *lockclient.Lease implements it. A binding of several leases with different tokens
// (WithLeases, nested WithLease, a statement's lease joining a transaction), or of a
// lease and a larger bare token (WithToken), needs every lease whose token is below the
// one carried to implement it: a lease that does not is
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
// every copy of the binding carrying the same token: made by WithLeases when the
// leases' tokens differ, by WithToken when its token is above one of the leases'.
type leaseProof struct {
	mu   sync.Mutex
	done bool
}

// prove confirms b's leases against the token b carries (proveLeases) unless they
// were confirmed before, for BeginTx and the statements under b outside a transaction;
// what says what was refused.
func (b binding) prove(ctx context.Context, what string) error {
	if b.proof == nil {
		return nil // no lease below b's token: nothing to confirm
	}
	b.proof.mu.Lock()
	defer b.proof.mu.Unlock()
	if b.proof.done {
		return nil
	}
	if err := proveLeases(ctx, what, b.leases, b.token); err != nil {
		return err
	}
	b.proof.done = true
	return nil
}

// needsProof reports whether one of leases carries a token below tok, the token work
// under them carries, so that they must be confirmed (proveLeases) before tok is used.
func needsProof(leases []Lease, tok uint64) bool {
	for _, l := range leases {
		if l.Token() < tok {
			return true
		}
	}
	return false
}

// proveLeases confirms that every lease of leases with a token below tok, the token the
// work carries, was held at the lock service after tok came into existence: after the
// grant of the lease of token tok arrived (LeaseConfirmer.GrantReceived), or, when no
// lease carries tok (a bare token, WithToken: of unknown origin, it existed before
// now), after now. At most one round trip per such lease, none when a renewal sent
// after that time already confirmed it; none either when no lease is below tok. It
// refuses with an error wrapping lockclient.ErrLeaseLost when the service did not
// confirm one, and with one wrapping ErrUnsupported when such a lease cannot be
// confirmed (it does not implement LeaseConfirmer).
func proveLeases(ctx context.Context, what string, leases []Lease, tok uint64) error {
	var top Lease
	for _, l := range leases {
		if l.Token() == tok {
			top = l
			break
		}
	}
	beside := fmt.Sprintf("the bare token %d (WithToken)", tok)
	if top != nil {
		beside = fmt.Sprintf("the lease of token %d", tok)
	}
	var since time.Time
	for _, l := range leases {
		if l.Token() >= tok {
			continue
		}
		lc, ok := l.(LeaseConfirmer)
		if !ok {
			return &UnsupportedError{Reason: fmt.Sprintf("%s: the lease of token %d, bound beside %s, is a %T, which does not implement fencedsql.LeaseConfirmer: "+
				"nothing shows its lock had no other holder before token %d came into existence (bind the leases of several locks, or a larger token over a lease, only if each can be confirmed at its lock service)",
				what, l.Token(), beside, l, tok)}
		}
		if since.IsZero() {
			if tc, ok := top.(LeaseConfirmer); ok {
				since = tc.GrantReceived()
			}
			if since.IsZero() {
				since = time.Now() // tok existed before: it was read
			}
		}
		if err := lc.ConfirmHeldSince(ctx, since); err != nil {
			return fmt.Errorf("fencedsql: %s: the lock service did not confirm the lease of token %d still held after %s, whose token the work carries, came into existence: %w: %w",
				what, l.Token(), beside, lockclient.ErrLeaseLost, err)
		}
	}
	return nil
}
