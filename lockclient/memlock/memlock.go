// Package memlock is an in-process lock service: the embedded default backend of
// lockclient and the one fast tests and the fault drill run on.
//
// A Service judges expiry on its own clock, exactly like a remote lock service: a grant
// or renewal is valid for the session's TTL from the moment the Service handles the
// request. Tokens come from one counter shared by all keys, which RaiseFloor and
// WithMinToken raise (lockclient.FloorRaiser); it lives as long as the Service. Several lockclient.Clients
// may share one Service; each opens its own session and behaves like a separate process.
//
// # Fair handoff
//
// Sessions implement lockclient.QueueSession: the waiters of a key queue in arrival
// order, and a release (or the holder's expiry, noticed at that moment by the first
// waiter's timer) hands the key directly to the first waiter, waking it alone. Its token
// is drawn at the handoff, so tokens follow grant order across keys. TryAcquire never
// barges in: a key with waiters is never free. A waiter whose context ends leaves the
// queue at once; if the key was handed to it in that instant, the grant is released
// (owner-checked) and passed on. The service promises strict FIFO among the waiters of
// one key; a request either takes effect before its call returns or not at all (there is
// no network to hold it), so a cancelled TryAcquire leaves no grant behind.
//
// For tests it injects faults deterministically, per owner: Pause holds a client's
// requests until Resume (a stalled process whose renewals arrive late), Partition drops
// them until Heal (a black-holed network: calls end with ErrUnavailable when their
// context does), and Advance moves the service clock forward.
package memlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Service is an in-process lock service. The zero value is not usable; call New.
type Service struct {
	shared   bool // grants hang on their session's lease (WithSessionLeases)
	mu       sync.Mutex
	offset   time.Duration // added to time.Now by Advance
	seq      uint64        // last token issued
	nextSess uint64
	locks    map[string]*entry
	queues   map[string][]*waiter // waiters per key, in arrival order
	faults   map[string]*fault    // by owner
	renewals uint64
}

// waiter is one AcquireQueued call in a key's queue.
type waiter struct {
	ss      *session
	granted chan struct{} // closed when the key is handed to this waiter
	grant   lockclient.Grant
	at      time.Time // local time of the handoff: when the grant took effect
}

type entry struct {
	session *session // set in shared mode: the grant lives as long as the session lease
	sess    uint64
	owner   string
	token   uint64
	expires time.Time
	changed chan struct{} // closed when this grant ends (release, expiry noticed, clock jump)
}

type fault struct {
	paused      chan struct{} // non-nil while paused; closed by Resume
	partitioned chan struct{} // non-nil while partitioned; closed by Heal
}

// Option configures a Service.
type Option func(*config)

type config struct {
	sessionLeases bool
	minToken      uint64
}

// WithSessionLeases makes every grant hang on its session's single lease, the way etcd
// does: sessions implement lockclient.SessionRenewer, one renewal keeps all of a
// client's locks alive, and when the session lease expires every grant of it ends.
func WithSessionLeases() Option { return func(c *config) { c.sessionLeases = true } }

// WithMinToken starts the service with its token floor at n: every token it issues is
// greater than n, as after RaiseFloor(ctx, n).
func WithMinToken(n uint64) Option { return func(c *config) { c.minToken = n } }

// New returns an empty lock service.
func New(opts ...Option) *Service {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return &Service{shared: cfg.sessionLeases, seq: cfg.minToken, locks: make(map[string]*entry), queues: make(map[string][]*waiter),
		faults: make(map[string]*fault)}
}

func (s *Service) now() time.Time { return time.Now().Add(s.offset) }

// Open implements lockclient.Backend.
func (s *Service) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("memlock: %w: ttl must be positive, got %v", lockclient.ErrInvalidConfig, ttl)
	}
	if err := s.gate(ctx, owner); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextSess++
	ss := &session{svc: s, id: s.nextSess, owner: owner, ttl: ttl, expires: s.now().Add(ttl)}
	if s.shared {
		return &sharedSession{ss}, nil
	}
	return ss, nil
}

// Holder reports who holds key now, by the service's clock.
func (s *Service) Holder(key string) (owner string, token uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live(key)
	if e == nil {
		return "", 0, false
	}
	return e.owner, e.token, true
}

var _ lockclient.FloorRaiser = (*Service)(nil)

// RaiseFloor implements lockclient.FloorRaiser: every token issued after it returns is
// greater than min. The floor and the token counter are one number (the last token
// issued, or the floor when higher), raised only upward under the service's lock, so a
// raise is atomic against grants. It lasts as long as the Service. It never fails.
func (s *Service) RaiseFloor(ctx context.Context, min uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq = max(s.seq, min)
	return nil
}

// LastToken implements lockclient.FloorRaiser: the last fencing token the service
// issued, or its floor when higher. It never fails.
func (s *Service) LastToken(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq, nil
}

// Renewals returns how many renewal requests the service has handled.
func (s *Service) Renewals() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals
}

// Advance moves the service's clock forward by d, expiring the grants that d outlives.
func (s *Service) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
	for key, e := range s.locks {
		close(e.changed)
		e.changed = make(chan struct{})
		s.live(key) // expire it, handing the key to its first waiter
	}
}

// live returns key's entry if it is held now. An expired one is dropped and the key
// handed to its first waiter, whose entry is then returned. Caller holds mu.
func (s *Service) live(key string) *entry {
	e := s.locks[key]
	if e == nil {
		return s.handOff(key)
	}
	if e.session != nil {
		e.expires = e.session.expires
	}
	if !s.now().Before(e.expires) {
		delete(s.locks, key)
		close(e.changed)
		return s.handOff(key)
	}
	return e
}

// handOff grants the free key to the first waiter of its queue, if any, and wakes that
// waiter only. Caller holds mu; the key is not held.
func (s *Service) handOff(key string) *entry {
	q := s.queues[key]
	if len(q) == 0 {
		return nil
	}
	w := q[0]
	s.dequeue(key, w)
	e := s.grantLocked(w.ss, key)
	w.grant, w.at = lockclient.Grant{Key: key, Token: e.token}, time.Now()
	close(w.granted)
	return e
}

// dequeue removes w from key's queue. Caller holds mu.
func (s *Service) dequeue(key string, w *waiter) {
	q := s.queues[key]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(s.queues, key)
	} else {
		s.queues[key] = q
	}
}

// grantLocked grants the free key to ss with the next token. With session leases the
// grant hangs on the session's lease, which it renews (a lapsed one is replaced by a new
// lease, and the grants of the old one stay dead). Caller holds mu.
func (s *Service) grantLocked(ss *session, key string) *entry {
	if s.shared {
		s.refreshSessionLocked(ss)
	}
	s.seq++
	e := &entry{sess: ss.id, owner: ss.owner, token: s.seq, expires: s.now().Add(ss.ttl), changed: make(chan struct{})}
	if s.shared {
		if d := s.now().Add(ss.ttl); d.After(ss.expires) {
			ss.expires = d
		}
		e.session = ss
		e.expires = ss.expires
	}
	s.locks[key] = e
	return e
}

// refreshSessionLocked replaces the lapsed lease of session ss (shared mode) by a new
// one: the grants of the old lease end. Caller holds mu.
func (s *Service) refreshSessionLocked(ss *session) {
	if s.now().Before(ss.expires) {
		return
	}
	var freed []string
	for k, e := range s.locks {
		if e.session == ss {
			delete(s.locks, k)
			close(e.changed)
			freed = append(freed, k)
		}
	}
	ss.expires = s.now().Add(ss.ttl)
	for _, k := range freed {
		s.handOff(k)
	}
}

// gate applies the owner's injected faults to one request.
func (s *Service) gate(ctx context.Context, owner string) error {
	for {
		s.mu.Lock()
		f := s.faults[owner]
		var paused, cut chan struct{}
		if f != nil {
			paused, cut = f.paused, f.partitioned
		}
		s.mu.Unlock()
		switch {
		case cut != nil:
			// Black hole: the request never arrives.
			<-ctx.Done()
			return fmt.Errorf("memlock: %w: partitioned: %w", lockclient.ErrUnavailable, ctx.Err())
		case paused != nil:
			select {
			case <-paused:
				continue // delivered late, after Resume
			case <-ctx.Done():
				return fmt.Errorf("memlock: %w: %w", lockclient.ErrUnavailable, ctx.Err())
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memlock: %w: %w", lockclient.ErrUnavailable, err)
		}
		return nil
	}
}

func (s *Service) faultFor(owner string) *fault {
	f := s.faults[owner]
	if f == nil {
		f = &fault{}
		s.faults[owner] = f
	}
	return f
}

// Pause holds every request from owner's clients (renewals included) until Resume, as
// if the process were stopped: the service keeps judging expiry, and requests delivered
// after Resume are answered by the state at that time.
func (s *Service) Pause(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faultFor(owner); f.paused == nil {
		f.paused = make(chan struct{})
	}
}

// Resume delivers owner's held requests and lets new ones through.
func (s *Service) Resume(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faults[owner]; f != nil && f.paused != nil {
		close(f.paused)
		f.paused = nil
	}
}

// Partition cuts owner off from the service: its requests are lost, and calls end with
// an error wrapping lockclient.ErrUnavailable when their context ends.
func (s *Service) Partition(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faultFor(owner); f.partitioned == nil {
		f.partitioned = make(chan struct{})
	}
}

// Heal ends owner's partition.
func (s *Service) Heal(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faults[owner]; f != nil && f.partitioned != nil {
		close(f.partitioned)
		f.partitioned = nil
	}
}

type session struct {
	svc     *Service
	id      uint64
	owner   string
	ttl     time.Duration
	expires time.Time // the session lease (shared mode), guarded by svc.mu
}

// sharedSession is a session whose grants share its lease.
type sharedSession struct{ *session }

// RenewSession implements lockclient.SessionRenewer.
func (ss *sharedSession) RenewSession(ctx context.Context) error {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals++
	if !s.now().Before(ss.expires) {
		return lockclient.ErrLeaseLost
	}
	ss.expires = s.now().Add(ss.ttl)
	return nil
}

func (ss *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return lockclient.Grant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared {
		s.refreshSessionLocked(ss) // like a client that re-grants its lapsed etcd lease
	}
	// A free key with waiters is handed to the first of them by live: no barging.
	if e := s.live(key); e != nil {
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	e := s.grantLocked(ss, key)
	return lockclient.Grant{Key: key, Token: e.token}, nil
}

// AcquireQueued implements lockclient.QueueSession: the caller joins key's queue and is
// granted the key when every waiter ahead of it was served and the holder released or
// expired; the handoff wakes this waiter only.
func (ss *session) AcquireQueued(ctx context.Context, key string) (lockclient.Grant, time.Time, error) {
	s := ss.svc
	sent := time.Now()
	if err := s.gate(ctx, ss.owner); err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	s.mu.Lock()
	if s.shared {
		s.refreshSessionLocked(ss)
	}
	if s.live(key) == nil {
		e := s.grantLocked(ss, key)
		s.mu.Unlock()
		return lockclient.Grant{Key: key, Token: e.token}, sent, nil
	}
	w := &waiter{ss: ss, granted: make(chan struct{})}
	s.queues[key] = append(s.queues[key], w)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Wake at the holder's expiry (the service's clock) to hand the key over.
		var changed chan struct{}
		until := time.Hour
		if e := s.locks[key]; e != nil {
			changed, until = e.changed, e.expires.Sub(s.now())+time.Millisecond
		}
		s.mu.Unlock()
		timer.Reset(max(until, 0))
		select {
		case <-w.granted:
			// The reply reaches a paused client late, and a cut-off one never.
			if err := s.gate(ctx, ss.owner); err != nil {
				ss.releaseAbandoned(w.grant)
				return lockclient.Grant{}, time.Time{}, err
			}
			return w.grant, w.at, nil
		case <-timer.C:
		case <-changed:
		case <-ctx.Done():
			s.mu.Lock()
			select {
			case <-w.granted:
				// Granted as the caller gave up: release it, handing the key on.
				s.releaseLocked(ss, w.grant)
			default:
				s.dequeue(key, w)
			}
			s.mu.Unlock()
			return lockclient.Grant{}, time.Time{}, fmt.Errorf("memlock: acquire %q: %w", key, ctx.Err())
		}
		s.mu.Lock()
		s.live(key) // hands an expired key over
	}
}

// releaseAbandoned releases, owner-checked, a grant whose caller gave up.
func (ss *session) releaseAbandoned(g lockclient.Grant) {
	ss.svc.mu.Lock()
	defer ss.svc.mu.Unlock()
	ss.svc.releaseLocked(ss, g)
}

func (ss *session) Wait(ctx context.Context, key string) error {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return err
	}
	s.mu.Lock()
	e := s.live(key)
	if e == nil {
		s.mu.Unlock()
		return nil
	}
	ch, until := e.changed, e.expires.Sub(s.now())
	s.mu.Unlock()
	t := time.NewTimer(until)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (ss *session) Renew(ctx context.Context, g lockclient.Grant) error {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals++
	e := s.live(g.Key)
	if e == nil || e.sess != ss.id || e.token != g.Token {
		return lockclient.ErrLeaseLost
	}
	e.expires = s.now().Add(ss.ttl)
	return nil
}

func (ss *session) Release(ctx context.Context, g lockclient.Grant) error {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.releaseLocked(ss, g)
}

// releaseLocked frees g if ss still holds it, handing the key to its first waiter.
// Caller holds mu.
func (s *Service) releaseLocked(ss *session, g lockclient.Grant) error {
	e := s.locks[g.Key]
	if e != nil && e.session != nil {
		e.expires = e.session.expires
	}
	switch {
	case e == nil:
		s.live(g.Key)
		return lockclient.ErrLeaseLost
	case e.sess != ss.id || e.token != g.Token:
		s.live(g.Key)
		return lockclient.ErrNotOwner
	case !s.now().Before(e.expires):
		s.live(g.Key) // expired and not retaken
		return lockclient.ErrLeaseLost
	}
	delete(s.locks, g.Key)
	close(e.changed)
	s.handOff(g.Key)
	return nil
}

func (ss *session) Close(ctx context.Context) error { return nil }
