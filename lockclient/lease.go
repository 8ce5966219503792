package lockclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Lease is one grant of a lock. It stays trustworthy until Lost is closed; after that,
// Err says why. The fencing token never changes during the lease's life.
type Lease struct {
	c       *Client
	grant   Grant
	lost    chan struct{}
	granted time.Time
	// serviceID is the session's ServiceIdentifier answer when the lease was granted
	// ("" when it has none): what ServiceID answers.
	serviceID string

	// Guarded by c.mu.
	err       error
	deadline  time.Time // local deadline: never later than the service's expiry
	nextRenew time.Time
	idx       int  // position in c.leases, -1 when not scheduled
	inflight  bool // a renewal is running
	ended     bool // lost or released: no more renewals
	released  bool
	unhealthy error // the health check's last refusal, nil once a renewal passed it
	// confirmed is when the latest renewal of this grant the service accepted was
	// sent (the watchdog's, or ConfirmHeldSince's); zero for none. A session-level
	// renewal (SessionRenewer) does not count: it does not check the grant's key.
	confirmed time.Time
}

// Key returns the name of the lock.
func (l *Lease) Key() string { return l.grant.Key }

// Token returns the fencing token of this grant: strictly greater than the token of
// every earlier grant of the same lock service, for any key.
func (l *Lease) Token() uint64 { return l.grant.Token }

// Lost returns a channel that is closed once the lease can no longer be trusted: the
// service refused a renewal, renewals failed until the local deadline, the lease was
// released, or the client was closed.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err returns nil while the lease is held, and afterwards an error wrapping
// ErrLeaseLost (or ErrNotOwner) that says why it was lost; a lease lost because the
// health check (WithHealthCheck) withheld its renewals also wraps ErrUnhealthy and the
// check's error.
//
// Err also enforces the local deadline itself: past it, the lease is declared lost even
// if the watchdog has not run yet (a starved process), so a caller that checks Err
// before writing never trusts a lease longer than the service would. The deadline has
// come when either the monotonic or the wall clock says so: the monotonic clock does not
// count a suspended machine's sleep.
func (l *Lease) Err() error {
	c := l.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !l.ended && c.pastDeadline(time.Now(), l.deadline) {
		c.loseAtDeadlineLocked(l)
	}
	return l.err
}

// Deadline returns the local time until which the lease is trusted without a further
// successful renewal. The service will not expire the lease before it.
func (l *Lease) Deadline() time.Time {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	return l.deadline
}

// Release gives the lock back. The service checks owner and token, so releasing a lease
// that already expired never frees another holder's lock: it returns an error wrapping
// ErrLeaseLost (the lease had been declared lost) or ErrNotOwner (the service no longer
// held it). A second Release of a released lease returns nil. If the service cannot be
// reached the error wraps ErrUnavailable and the lock stays held until the service
// expires it: after its TTL, or for backends with one session lease (etcd) when that
// session ends. Give Release a context with a deadline. The service is called without
// ctx's caller-only values (CallerOnlyKey), so ctx may be the context the lease is bound
// to (fencedsql.WithLease): the release is not refused for the lease it ends.
func (l *Lease) Release(ctx context.Context) error {
	c := l.c
	c.mu.Lock()
	if l.released {
		c.mu.Unlock()
		return nil
	}
	l.released = true
	prior := l.err
	c.endLocked(l, errReleased)
	c.mu.Unlock()

	s := c.sess // set before any lease exists; never reset
	// The service is called without ctx's caller-only values: a lease bound to ctx
	// (fencedsql.WithLease, this very lease, now ended) must not refuse the release's
	// own statement (rt41c F4).
	err := s.Release(serviceContext(ctx), l.grant)
	switch {
	case prior != nil:
		// Declared lost earlier: report that, whatever the service said.
		return fmt.Errorf("lockclient: release %q (token %d): %w", l.grant.Key, l.grant.Token, prior)
	case err == nil:
		return nil
	case errors.Is(err, ErrNotOwner), errors.Is(err, ErrLeaseLost):
		return fmt.Errorf("lockclient: release %q (token %d): %w", l.grant.Key, l.grant.Token, err)
	default:
		return fmt.Errorf("lockclient: release %q (token %d): %w", l.grant.Key, l.grant.Token, classify(err))
	}
}

// loseLocked ends the lease because it can no longer be trusted; cause is the
// lock.cause attribute (refused, deadline, closed).
func (c *Client) loseLocked(l *Lease, reason error, cause []metric.AddOption) {
	if l.ended {
		return
	}
	c.cfg.logger.Warn("lockclient: lease lost", "key", l.grant.Key, "token", l.grant.Token, "reason", reason.Error())
	c.metrics.lost.Add(context.Background(), 1, cause...)
	c.endLocked(l, reason)
}

// endLocked unschedules l and closes Lost with reason (once).
func (c *Client) endLocked(l *Lease, reason error) {
	if l.idx >= 0 {
		c.unschedule(l)
	}
	if !l.ended {
		l.ended = true
		l.err = reason
		close(l.lost)
		end := c.metrics.holdLost
		if reason == errReleased {
			end = c.metrics.holdReleased
		}
		c.metrics.hold.Record(context.Background(), time.Since(l.granted).Seconds(), end...)
	}
}
