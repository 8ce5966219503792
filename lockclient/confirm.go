package lockclient

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A lease's token orders its grant among every grant of its lock service, but says
// nothing of what the service did since: a lease the service expired, revoked or
// dropped (its clock ahead, an operator's forced unlock, a failover that lost the key)
// still reports held (Err nil) until its client notices. Work bound to several leases
// at once carries the largest of their tokens (fencedsql.WithLeases), which is safe on
// the rows of a smaller-token lock only if that lock was still held at the service
// after the largest token was granted: then no other holder of it was granted in
// between, and any later holder gets a larger token than the largest (red-team rt45f
// F2). GrantReceived and ConfirmHeldSince let the caller prove that.

// GrantReceived returns the local time at which the lease's grant arrived from the
// lock service (after the service issued its token). A request sent after it reaches
// the service after the grant; the zero time for a nil or zero-value Lease.
func (l *Lease) GrantReceived() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.granted
}

// ConfirmHeldSince returns nil once the lock service has confirmed that it still holds
// this lease's grant, for this lease's session and token, in answer to a request sent
// after since (a local time, such as another lease's GrantReceived): the lock had no
// other holder between this grant and the service's answer. A renewal of the grant
// sent after since that the service accepted is such a confirmation (the watchdog's
// own, for backends that renew each grant), and answers at once, with no round trip;
// otherwise ConfirmHeldSince renews the grant now, once (the service's Renew, which
// checks owner, token and expiry), bounded by ctx and by the lease's local deadline,
// and called without ctx's caller-only values (CallerOnlyKey).
//
// It returns an error wrapping ErrLeaseLost when the lease is lost or released, when
// the service refuses the renewal (the lease is then declared lost, as on a refused
// renewal of the watchdog); one wrapping ErrUnhealthy when the health check
// (WithHealthCheck) withholds the renewal, and one wrapping ErrUnavailable when the
// service could not answer (in both the lease is not declared lost: the watchdog goes
// on, and the caller cannot count the lock as confirmed). A successful
// confirmation does not move the lease's local deadline.
func (l *Lease) ConfirmHeldSince(ctx context.Context, since time.Time) error {
	if l == nil || l.c == nil {
		return fmt.Errorf("lockclient: confirm: not a lease that was granted: %w", ErrLeaseLost)
	}
	c := l.c
	c.mu.Lock()
	if !l.ended && c.pastDeadline(time.Now(), l.deadline) {
		c.loseAtDeadlineLocked(l)
	}
	if l.ended {
		err := l.err
		c.mu.Unlock()
		return fmt.Errorf("lockclient: confirm %q (token %d): %w", l.grant.Key, l.grant.Token, err)
	}
	if l.confirmed.After(since) {
		c.mu.Unlock()
		return nil
	}
	deadline := l.deadline
	c.mu.Unlock()

	rctx, cancel := context.WithDeadline(serviceContext(ctx), deadline)
	defer cancel()
	if herr := c.healthy(rctx); herr != nil {
		return fmt.Errorf("lockclient: confirm %q (token %d): renewal withheld, the application reports itself unhealthy: %w: %w",
			l.grant.Key, l.grant.Token, ErrUnhealthy, herr)
	}
	sent := time.Now()
	err := c.sess.Renew(rctx, l.grant)

	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		if l.ended {
			return fmt.Errorf("lockclient: confirm %q (token %d): %w", l.grant.Key, l.grant.Token, l.err)
		}
		if sent.After(l.confirmed) {
			l.confirmed = sent
		}
		return nil
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotOwner):
		reason := fmt.Errorf("%w: confirmation refused by the lock service: %w", ErrLeaseLost, err)
		c.loseLocked(l, reason, c.metrics.lostRefused)
		return fmt.Errorf("lockclient: confirm %q (token %d): %w", l.grant.Key, l.grant.Token, reason)
	default:
		return fmt.Errorf("lockclient: confirm %q (token %d): %w", l.grant.Key, l.grant.Token, classify(err))
	}
}
