package lockclient

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"
)

// The watchdog is one goroutine per Client. It keeps every held lease in a min-heap
// ordered by its next event: the next renewal, or the local deadline while a renewal
// is in flight. Renewals run in short-lived goroutines whose context ends at the
// lease's local deadline, so a hung service can never keep a lease alive past it.
// Memory per held lease is the Lease value and its channel; no goroutine per lease.

func (l *Lease) nextEvent() time.Time {
	if l.inflight || l.deadline.Before(l.nextRenew) {
		return l.deadline
	}
	return l.nextRenew
}

type leaseHeap []*Lease

func (h leaseHeap) Len() int           { return len(h) }
func (h leaseHeap) Less(i, j int) bool { return h[i].nextEvent().Before(h[j].nextEvent()) }
func (h leaseHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx = i
	h[j].idx = j
}
func (h *leaseHeap) Push(x any) {
	l := x.(*Lease)
	l.idx = len(*h)
	*h = append(*h, l)
}
func (h *leaseHeap) Pop() any {
	old := *h
	n := len(old)
	l := old[n-1]
	old[n-1] = nil
	l.idx = -1
	*h = old[:n-1]
	return l
}

func (c *Client) schedule(l *Lease) {
	heap.Push(&c.leases, l)
	c.wake()
}

func (c *Client) unschedule(l *Lease) {
	heap.Remove(&c.leases, l.idx)
}

func (c *Client) reschedule(l *Lease) {
	if l.idx >= 0 {
		heap.Fix(&c.leases, l.idx)
	}
	c.wake()
}

func (c *Client) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *Client) watchdog() {
	defer c.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		c.mu.Lock()
		now := time.Now()
		for len(c.leases) > 0 {
			l := c.leases[0]
			if now.Before(l.nextEvent()) {
				break
			}
			if c.pastDeadline(now, l.deadline) {
				c.loseAtDeadlineLocked(l)
				continue
			}
			// A renewal is due.
			l.inflight = true
			heap.Fix(&c.leases, 0)
			c.wg.Add(1)
			go c.renew(l, l.deadline)
		}
		if len(c.leases) == 0 {
			c.sessNext = time.Time{}
		}
		if c.sessRenewer != nil && !c.sessNext.IsZero() && !c.sessInflight && !now.Before(c.sessNext) {
			c.sessInflight = true
			c.wg.Add(1)
			go c.renewSession(c.leases[0].deadline)
		}
		wait := time.Hour
		if len(c.leases) > 0 {
			wait = time.Until(c.leases[0].nextEvent())
		}
		if !c.sessNext.IsZero() && !c.sessInflight {
			wait = min(wait, time.Until(c.sessNext))
		}
		c.mu.Unlock()

		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-c.kick:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		case <-c.done:
			c.mu.Lock()
			for len(c.leases) > 0 {
				c.loseLocked(c.leases[0], wrapLost("client closed"), c.metrics.lostClosed)
			}
			c.mu.Unlock()
			return
		}
	}
}

func (c *Client) renew(l *Lease, deadline time.Time) {
	defer c.wg.Done()
	ctx, cancel := context.WithDeadline(c.bg, deadline)
	herr := c.healthy(ctx)
	sent := time.Now()
	var err error
	if herr == nil {
		err = c.sess.Renew(ctx, l.grant)
	}
	cancel()

	c.mu.Lock()
	defer c.mu.Unlock()
	if l.ended {
		return
	}
	l.inflight = false
	now := time.Now()
	if herr != nil {
		c.metrics.renew.Add(context.Background(), 1, c.metrics.renewUnhealthy...)
		if l.unhealthy == nil {
			c.cfg.logger.Warn("lockclient: renewal withheld: the application reports itself unhealthy", "key", l.grant.Key, "token", l.grant.Token, "err", herr)
		}
		l.unhealthy = herr
		l.nextRenew = now.Add(max(c.cfg.renewEvery/4, 5*time.Millisecond))
		c.reschedule(l)
		return
	}
	l.unhealthy = nil
	c.countRenewal(err)
	switch {
	case err == nil:
		if d := sent.Add(c.cfg.ttl - c.cfg.margin); d.After(l.deadline) {
			l.deadline = d
		}
		if sent.After(l.confirmed) {
			l.confirmed = sent
		}
		l.nextRenew = sent.Add(c.cfg.renewEvery)
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotOwner):
		c.loseLocked(l, fmt.Errorf("%w: renewal refused by the lock service: %w", ErrLeaseLost, err), c.metrics.lostRefused)
		return
	default:
		c.cfg.logger.Warn("lockclient: renewal failed", "key", l.grant.Key, "token", l.grant.Token, "err", err)
		retry := max(c.cfg.renewEvery/4, 5*time.Millisecond)
		l.nextRenew = now.Add(retry)
	}
	c.reschedule(l)
}

// renewSession renews the shared session lease of a SessionRenewer backend; its context
// ends at the earliest local deadline of the leases it keeps alive.
func (c *Client) renewSession(deadline time.Time) {
	defer c.wg.Done()
	ctx, cancel := context.WithDeadline(c.bg, deadline)
	herr := c.healthy(ctx)
	sent := time.Now()
	var err error
	if herr == nil {
		err = c.sessRenewer.RenewSession(ctx)
	}
	cancel()

	c.mu.Lock()
	defer c.mu.Unlock()
	c.sessInflight = false
	if herr != nil {
		c.metrics.renew.Add(context.Background(), 1, c.metrics.renewUnhealthy...)
		if c.sessUnhealthy == nil {
			c.cfg.logger.Warn("lockclient: session renewal withheld: the application reports itself unhealthy", "err", herr)
		}
		c.sessUnhealthy = herr
		if len(c.leases) > 0 {
			c.sessNext = time.Now().Add(max(c.cfg.renewEvery/4, 5*time.Millisecond))
		}
		c.wake()
		return
	}
	c.sessUnhealthy = nil
	c.countRenewal(err)
	switch {
	case err == nil:
		d := sent.Add(c.cfg.ttl - c.cfg.margin)
		for _, l := range c.leases {
			if d.After(l.deadline) {
				l.deadline = d
				l.nextRenew = d.Add(time.Hour)
			}
		}
		heap.Init(&c.leases)
		if len(c.leases) > 0 {
			c.sessNext = sent.Add(c.cfg.renewEvery)
		}
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotOwner):
		// Every lease is dropped, also those whose grants the service may still hold (a
		// grant made on a newer session lease after an earlier one ended: the service
		// cannot say which grants survived), and each is released in the background,
		// owner-checked, so that such a grant's key is not kept alive by later renewals of
		// the session for as long as the client runs.
		for len(c.leases) > 0 {
			l := c.leases[0]
			c.loseLocked(l, fmt.Errorf("%w: session renewal refused by the lock service: %w", ErrLeaseLost, err), c.metrics.lostRefused)
			c.freeLostLocked(l)
		}
		c.sessNext = time.Time{}
	default:
		c.cfg.logger.Warn("lockclient: session renewal failed", "err", err)
		if len(c.leases) > 0 {
			c.sessNext = time.Now().Add(max(c.cfg.renewEvery/4, 5*time.Millisecond))
		}
	}
	c.wake()
}

func (c *Client) countRenewal(err error) {
	opts := c.metrics.renewOK
	switch {
	case err == nil:
	case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotOwner):
		opts = c.metrics.renewRefused
	default:
		opts = c.metrics.renewFailed
	}
	c.metrics.renew.Add(context.Background(), 1, opts...)
}
