package lockclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// healthGate runs WithHealthCheck's check before renewals; renewals that need an answer
// while a call is running share it.
type healthGate struct {
	check func(context.Context) error
	mu    sync.Mutex
	call  *healthCall
}

type healthCall struct {
	done chan struct{}
	err  error
}

// errUnhealthyTimeout is the answer of a check that did not return in time.
var errUnhealthyTimeout = errors.New("the health check did not answer in time")

// healthy asks the health check, if any, whether a renewal may be sent; ctx bounds the
// wait (the earliest local deadline the renewal serves). A check still running when
// ctx ends counts as unhealthy.
func (c *Client) healthy(ctx context.Context) error {
	h := &c.health
	if h.check == nil {
		return nil
	}
	h.mu.Lock()
	call := h.call
	if call == nil {
		call = &healthCall{done: make(chan struct{})}
		h.call = call
		timeout := max(c.cfg.renewEvery/2, time.Millisecond)
		cctx, cancel := context.WithTimeout(c.bg, timeout)
		if d, ok := ctx.Deadline(); ok {
			cctx, cancel = contextWithEarlierDeadline(cctx, cancel, d)
		}
		// Not counted in c.wg: a check that ignores its context is abandoned, not awaited.
		go func() {
			defer cancel()
			err := runCheck(cctx, h.check)
			if err == nil && cctx.Err() != nil {
				err = errUnhealthyTimeout
			}
			h.mu.Lock()
			call.err = err
			h.call = nil
			h.mu.Unlock()
			close(call.done)
		}()
	}
	h.mu.Unlock()
	select {
	case <-call.done:
		return call.err
	case <-ctx.Done():
		return errUnhealthyTimeout
	}
}

func contextWithEarlierDeadline(ctx context.Context, cancel context.CancelFunc, d time.Time) (context.Context, context.CancelFunc) {
	dctx, dcancel := context.WithDeadline(ctx, d)
	return dctx, func() { dcancel(); cancel() }
}

// runCheck calls check, turning a panic into an error.
func runCheck(ctx context.Context, check func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the health check panicked: %v", r)
		}
	}()
	return check(ctx)
}

// loseAtDeadlineLocked declares l lost at its local deadline: renewals failed, or were
// withheld by the health check; then frees its key at the service. Caller holds mu.
func (c *Client) loseAtDeadlineLocked(l *Lease) {
	if l.ended {
		return
	}
	unhealthy := l.unhealthy
	if unhealthy == nil && c.sessRenewer != nil {
		unhealthy = c.sessUnhealthy
	}
	if unhealthy != nil {
		c.loseLocked(l, &lostError{reason: "renewals withheld until the local deadline: the application reported itself unhealthy", cause: unhealthy, unhealthy: true}, c.metrics.lostUnhealthy)
	} else {
		c.loseLocked(l, wrapLost("renewals failed until the local deadline"), c.metrics.lostDeadline)
	}
	c.freeLostLocked(l)
}

// freeLostLocked releases, in the background and owner-checked, the grant of a lease
// declared lost at its local deadline or on a refused session renewal, so that its key
// does not stay blocked until the service expires it (or, for a session-lease backend,
// for as long as the session lives) when the user never calls Release. Caller holds mu.
func (c *Client) freeLostLocked(l *Lease) {
	if c.closed || l.released || c.sess == nil {
		return
	}
	s, g := c.sess, l.grant
	sessionLease := c.sessRenewer != nil
	c.wg.Add(1) // the watchdog or a Lease method runs: the count is not zero
	go func() {
		defer c.wg.Done()
		ctx := c.bg
		if !sessionLease {
			// A per-grant lease is gone at the service within a TTL anyway.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(c.bg, c.cfg.ttl)
			defer cancel()
		}
		backoff := c.cfg.retryBase
		for {
			rctx, cancel := context.WithTimeout(ctx, max(c.cfg.renewEvery, time.Second))
			err := s.Release(rctx, g)
			cancel()
			if err == nil || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrLeaseLost) {
				return
			}
			c.cfg.logger.Warn("lockclient: could not free the key of a lost lease, retrying", "key", g.Key, "token", g.Token, "err", err)
			if !sleepCtx(ctx, jitter(backoff)) {
				return
			}
			backoff = min(backoff*2, c.cfg.retryMax)
		}
	}()
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
