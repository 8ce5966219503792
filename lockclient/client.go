package lockclient

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"
)

// Client takes locks from one lock service on behalf of one process. It opens its
// session with the service lazily, on the first Acquire, and runs one watchdog that
// renews every lease it holds. A Client is safe for concurrent use.
type Client struct {
	backend Backend
	cfg     config
	cfgErr  error            // a *ConfigError from New, returned by Acquire and TryAcquire
	wall    func() time.Time // the wall clock, beside the monotonic one (pastDeadline)

	openMu sync.Mutex // serialises session opening
	sess   Session

	mu     sync.Mutex // guards the fields below and every Lease's scheduling state
	leases leaseHeap
	closed bool
	kick   chan struct{}
	done   chan struct{}

	watchdogStarted bool // the watchdog runs from the first grant on
	wg              sync.WaitGroup
	bg              context.Context // parent of renewal calls; cancelled by Close
	stop            context.CancelFunc
	closing         context.Context // cancelled as Close begins: ends every waiting Acquire
	closeNow        context.CancelFunc

	health healthGate // WithHealthCheck's check, shared by concurrent renewals

	// highest is the highest token granted to this Client per lock name (at most
	// maxRemembered names), guarded by mu: a later grant of the name at or below it
	// means the service's token source went back (checkTokenAdvances).
	highest map[string]uint64

	// Session-level renewal (SessionRenewer backends), guarded by mu.
	metrics *instruments

	sessRenewer   SessionRenewer
	sessNext      time.Time // next session renewal; zero while no lease is held
	sessInflight  bool
	sessUnhealthy error // the health check's last refusal of a session renewal
}

// New returns a Client for the lock service b. It neither contacts the service nor
// starts a goroutine: the session is opened by the first Acquire or TryAcquire, and the
// watchdog goroutine starts with the first granted lease.
//
// New does not fail (its signature has no error): an invalid option value (see each
// With* option), a nil b, or an invalid option of b's own constructor (a backend that
// implements [ConfigChecker]) is recorded as an error wrapping [ErrInvalidConfig] that
// every Acquire and TryAcquire of the Client returns at once, without contacting the
// service. Use [NewChecked] to get that error at construction instead.
func New(b Backend, opts ...Option) *Client {
	c, _ := NewChecked(b, opts...)
	return c
}

// NewChecked is New that also returns the configuration error New records: a
// *ConfigError for an invalid option value or a nil backend, or the error of b's
// [ConfigChecker], each wrapping [ErrInvalidConfig]. It neither contacts the service nor
// starts a goroutine, so it cannot detect a lock service that is set up wrongly (such as
// a missing sqllock lease table: see sqllock's Backend.CheckTable). The Client is
// returned in either case; with an error, its Acquire and TryAcquire return that error.
func NewChecked(b Backend, opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	cfgErr := cfg.finish()
	if b == nil {
		cfgErr = errors.Join(&ConfigError{Option: "New", Msg: "the Backend is nil"}, cfgErr)
	} else if cc, ok := b.(ConfigChecker); ok && cfgErr == nil {
		if err := cc.CheckConfig(); err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				err = fmt.Errorf("%w: %w", ErrInvalidConfig, err)
			}
			cfgErr = err
		}
	}
	bg, stop := context.WithCancel(context.Background())
	closing, closeNow := context.WithCancel(context.Background())
	return &Client{backend: b, cfg: cfg, cfgErr: cfgErr, wall: wallNow, kick: make(chan struct{}, 1), done: make(chan struct{}), bg: bg, stop: stop,
		closing: closing, closeNow: closeNow, health: healthGate{check: cfg.health},
		metrics: newInstruments(cfg.meter, backendName(b))}, cfgErr
}

// startWatchdogLocked starts the watchdog goroutine on the first grant. Caller holds mu
// and has checked that the client is not closed, so Close waits for it.
func (c *Client) startWatchdogLocked() {
	if c.watchdogStarted {
		return
	}
	c.watchdogStarted = true
	c.wg.Add(1)
	go c.watchdog()
}

// TTL returns the lease time-to-live this client asks for.
func (c *Client) TTL() time.Duration { return c.cfg.ttl }

// Owner returns the owner name this client presents to the lock service.
func (c *Client) Owner() string { return c.cfg.owner }

func (c *Client) session(ctx context.Context) (Session, error) {
	c.openMu.Lock()
	defer c.openMu.Unlock()
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if c.sess != nil {
		return c.sess, nil
	}
	s, err := c.backend.Open(ctx, c.cfg.owner, c.cfg.ttl)
	if err != nil {
		return nil, classify(err)
	}
	c.sess = s
	if sr, ok := s.(SessionRenewer); ok {
		c.mu.Lock()
		c.sessRenewer = sr
		c.mu.Unlock()
	}
	return s, nil
}

// TryAcquire makes one attempt to take the lock named key. It returns ErrHeld at once
// when another owner holds it, and an error wrapping ErrUnavailable when the service
// cannot be reached before ctx ends. A Client with an invalid configuration returns its
// error (errors.Is ErrInvalidConfig, see New) without contacting the service; so does a
// lock service that answers that it is set up wrongly (such as a missing sqllock lease
// table): such an error never wraps ErrUnavailable. The service is called with ctx's
// deadline, cancellation and values, except its caller-only values (CallerOnlyKey: a
// fencing lease bound by fencedsql.WithLease, even a lost one, does not refuse the
// grant's statements when the lease table is reached through a fenced pool).
func (c *Client) TryAcquire(ctx context.Context, key string) (l *Lease, err error) {
	start := time.Now()
	defer func() { c.metrics.acquired(start, err) }()
	if c.cfgErr != nil {
		return nil, fmt.Errorf("lockclient: try-acquire %q: %w", key, c.cfgErr)
	}
	wctx, cancel := c.untilClosed(ctx)
	defer cancel()
	s, err := c.session(wctx)
	if err == nil {
		l, err = c.try(wctx, s, key)
	}
	if err != nil {
		if ctx.Err() == nil && c.closing.Err() != nil {
			err = ErrClosed
		}
		return nil, fmt.Errorf("lockclient: try-acquire %q: %w", key, err)
	}
	return l, nil
}

// untilClosed returns the context a grant calls the service with: ctx without its
// caller-only values (serviceContext: a lease bound to ctx, even a lost one, must not
// refuse the grant's statements on a lease table reached through a fenced pool), also
// cancelled when Close begins.
func (c *Client) untilClosed(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(serviceContext(ctx))
	stop := context.AfterFunc(c.closing, cancel)
	return wctx, func() { stop(); cancel() }
}

// Acquire takes the lock named key, waiting while another owner holds it (until it is
// released or expires) and retrying with jittered backoff while the service is
// unreachable. It returns when the lock is granted or ctx ends: then the error wraps
// ctx.Err(), and also ErrUnavailable if the last attempt could not reach the service.
// A Client with an invalid configuration returns its error (errors.Is
// ErrInvalidConfig, see New) without contacting the service, and a lock service that
// answers that it is set up wrongly (an error wrapping ErrInvalidConfig, such as a
// missing sqllock lease table) ends Acquire at once with that error: neither is retried
// as unavailability.
//
// Waiters are served in the order the backend documents: in order of arrival for
// backends whose sessions implement QueueSession (all four shipped backends), each
// woken by its predecessor's release or expiry. Close ends a waiting Acquire at once
// with ErrClosed. The service is called as by TryAcquire, without ctx's caller-only
// values.
func (c *Client) Acquire(ctx context.Context, key string) (lease *Lease, err error) {
	start := time.Now()
	defer func() { c.metrics.acquired(start, err) }()
	if c.cfgErr != nil {
		return nil, fmt.Errorf("lockclient: acquire %q: %w", key, c.cfgErr)
	}
	wctx, cancel := c.untilClosed(ctx)
	defer cancel()
	lease, err = c.acquire(wctx, key)
	if err != nil && ctx.Err() == nil && c.closing.Err() != nil {
		return nil, fmt.Errorf("lockclient: acquire %q: %w", key, ErrClosed)
	}
	return lease, err
}

// acquire is Acquire's loop; ctx also ends when Close begins.
func (c *Client) acquire(ctx context.Context, key string) (*Lease, error) {
	backoff := c.cfg.retryBase
	var lastUnavailable error
	for {
		if err := ctx.Err(); err != nil {
			return nil, acquireCtxErr(key, err, lastUnavailable)
		}
		s, err := c.session(ctx)
		if err == nil {
			var l *Lease
			if qs, ok := s.(QueueSession); ok {
				l, err = c.queued(ctx, qs, key)
			} else {
				l, err = c.try(ctx, s, key)
			}
			if err == nil {
				return l, nil
			}
		}
		switch {
		case errors.Is(err, ErrClosed), errors.Is(err, ErrInvalidConfig):
			// ErrInvalidConfig: the backend refused its own or the service's
			// configuration (at Open, or at a grant: a missing lease table).
			return nil, fmt.Errorf("lockclient: acquire %q: %w", key, err)
		case err == errWaitEnded:
			return nil, acquireCtxErr(key, ctx.Err(), lastUnavailable)
		case errors.Is(err, ErrHeld):
			lastUnavailable = nil
			backoff = c.cfg.retryBase
			if werr := s.Wait(ctx, key); werr != nil && ctx.Err() == nil {
				// The service could not be watched: treat like unavailability.
				lastUnavailable = classify(werr)
				if !c.sleep(ctx, jitter(backoff)) {
					return nil, acquireCtxErr(key, ctx.Err(), lastUnavailable)
				}
				backoff = min(backoff*2, c.cfg.retryMax)
			}
		default:
			lastUnavailable = err
			if ctx.Err() != nil {
				return nil, acquireCtxErr(key, ctx.Err(), lastUnavailable)
			}
			c.cfg.logger.Warn("lockclient: lock service unreachable, retrying", "key", key, "err", err)
			if !c.sleep(ctx, jitter(backoff)) {
				return nil, acquireCtxErr(key, ctx.Err(), lastUnavailable)
			}
			backoff = min(backoff*2, c.cfg.retryMax)
		}
	}
}

// errWaitEnded is queued's answer when ctx ended while waiting in the queue.
var errWaitEnded = errors.New("lockclient: wait ended")

func acquireCtxErr(key string, ctxErr, unavailable error) error {
	if unavailable != nil {
		return fmt.Errorf("lockclient: acquire %q: %w (last attempt: %w)", key, ctxErr, unavailable)
	}
	return fmt.Errorf("lockclient: acquire %q: %w", key, ctxErr)
}

// sleep waits d or until ctx ends or the client closes; it reports whether to go on.
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-c.done:
		return true // the next attempt reports ErrClosed
	}
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// try makes one TryAcquire and turns a grant into a scheduled Lease.
func (c *Client) try(ctx context.Context, s Session, key string) (*Lease, error) {
	sent := time.Now()
	g, err := s.TryAcquire(ctx, key)
	if err != nil {
		return nil, classify(err)
	}
	return c.adopt(ctx, s, g, sent)
}

// queued waits in key's queue (QueueSession) and turns the grant into a scheduled Lease.
func (c *Client) queued(ctx context.Context, s QueueSession, key string) (*Lease, error) {
	g, sent, err := s.AcquireQueued(ctx, key)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, ErrUnavailable) {
			return nil, errWaitEnded // a wait that ctx ended: not a failure of the service
		}
		return nil, classify(err)
	}
	return c.adopt(ctx, s, g, sent)
}

// adopt turns grant g, whose granting request was sent at sent, into a scheduled Lease.
func (c *Client) adopt(ctx context.Context, s Session, g Grant, sent time.Time) (*Lease, error) {
	l := &Lease{c: c, grant: g, lost: make(chan struct{}), idx: -1, granted: time.Now()}
	if si, ok := s.(ServiceIdentifier); ok {
		// Read at each grant, not once per session: a backend may learn its identity
		// after Open (sqllock before CreateTable; red-team rt44c F3). A field read.
		l.serviceID = si.ServiceID()
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.releaseQuietly(ctx, s, g)
		return nil, ErrClosed
	}
	l.deadline = sent.Add(c.cfg.ttl - c.cfg.margin)
	if c.pastDeadline(time.Now(), l.deadline) {
		// The grant took longer than the TTL to arrive: it cannot be trusted.
		c.mu.Unlock()
		c.releaseQuietly(ctx, s, g)
		return nil, fmt.Errorf("%w: grant arrived after its local deadline", ErrUnavailable)
	}
	if err := c.checkTokenAdvancesLocked(g); err != nil {
		c.mu.Unlock()
		c.releaseQuietly(ctx, s, g)
		return nil, err
	}
	l.nextRenew = sent.Add(c.cfg.renewEvery)
	if c.sessRenewer != nil {
		// The session renewal extends this lease; it has no renewal of its own.
		l.nextRenew = l.deadline.Add(time.Hour)
		if c.sessNext.IsZero() {
			c.sessNext = sent.Add(c.cfg.renewEvery)
		}
	}
	c.startWatchdogLocked()
	c.schedule(l)
	c.mu.Unlock()
	return l, nil
}

// maxRemembered bounds the lock names whose highest token a Client remembers: beyond
// it, an arbitrary name is forgotten for each new one.
const maxRemembered = 1024

// checkTokenAdvancesLocked refuses grant g when its token is not above the highest
// token this Client was granted before for the same lock name: the lock service's
// token source went back (a Redis counter restored from an older snapshot, a deleted
// etcd floor key, a reset SQL sequence), and the token would lose to an older holder's
// at the guarded database. It records g's token otherwise. It returns an error wrapping
// ErrInvalidConfig (no retry passes: only raising the floor does). It detects a
// regression only within this Client's lifetime and for the names it remembers
// (maxRemembered); a new process after a restore is not protected by it. Grants of one
// name reach one Client in token order: a later grant of the name is made only after
// the earlier lease ended at the service, which is after its local deadline, so an
// earlier grant that arrives late is refused by the deadline check first. c.mu is held.
func (c *Client) checkTokenAdvancesLocked(g Grant) error {
	prev, ok := c.highest[g.Key]
	if ok && g.Token <= prev {
		return fmt.Errorf("lockclient: %w: lock %q was granted token %d, not above token %d this Client was granted for it earlier: "+
			"the lock service's token source went back (restored from an older snapshot, reset, or its floor deleted); "+
			"raise the service's token floor (FloorRaiser.RaiseFloor, lockfloor -raise) above %d and above the highest token the guarded tables hold",
			ErrInvalidConfig, g.Key, g.Token, prev, prev)
	}
	if c.highest == nil {
		c.highest = make(map[string]uint64)
	}
	if !ok && len(c.highest) >= maxRemembered {
		for k := range c.highest {
			delete(c.highest, k)
			break
		}
	}
	c.highest[g.Key] = g.Token
	return nil
}

// classify makes sure an error from a backend answers errors.Is for one of the
// package's sentinels: anything that is not a definite answer is ErrUnavailable.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrHeld), errors.Is(err, ErrUnavailable), errors.Is(err, ErrLeaseLost),
		errors.Is(err, ErrNotOwner), errors.Is(err, ErrClosed), errors.Is(err, ErrInvalidConfig):
		return err
	default:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
}

// Close releases every lease the client still holds (owner-checked, best effort within
// ctx), stops the watchdog and closes the session. Leases it could not release expire
// at the service after their TTL. Close is idempotent.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.closeNow() // waiting Acquires end with ErrClosed
	held := make([]*Lease, 0, len(c.leases))
	held = append(held, c.leases...)
	c.mu.Unlock()

	var errs []error
	for _, l := range held {
		if err := l.Release(ctx); err != nil && !errors.Is(err, ErrLeaseLost) && !errors.Is(err, ErrNotOwner) {
			errs = append(errs, err)
		}
	}
	close(c.done)
	c.stop()
	c.wg.Wait()
	c.openMu.Lock()
	if c.sess != nil {
		if err := c.sess.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	c.openMu.Unlock()
	return errors.Join(errs...)
}

func defaultOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = crand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func isHeld(err error) bool          { return errors.Is(err, ErrHeld) }
func isUnavailable(err error) bool   { return errors.Is(err, ErrUnavailable) }
func isInvalidConfig(err error) bool { return errors.Is(err, ErrInvalidConfig) }

// releaseQuietly gives back a grant the client will not use, owner-checked, within at
// most one TTL even when ctx has ended (the grant would expire by then anyway).
func (c *Client) releaseQuietly(ctx context.Context, s Session, g Grant) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.ttl)
	defer cancel()
	_ = s.Release(rctx, g)
}
