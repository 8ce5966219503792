// Package memlock is an in-process lock service: the embedded default backend of
// lockclient and the one fast tests and the fault drill run on.
//
// A Service judges expiry on its own clock, exactly like a remote lock service: a grant
// or renewal is valid for the session's TTL from the moment the Service handles the
// request. Tokens come from one counter shared by all keys. Several lockclient.Clients
// may share one Service; each opens its own session and behaves like a separate process.
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
	faults   map[string]*fault // by owner
	renewals uint64
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
}

// WithSessionLeases makes every grant hang on its session's single lease, the way etcd
// does: sessions implement lockclient.SessionRenewer, one renewal keeps all of a
// client's locks alive, and when the session lease expires every grant of it ends.
func WithSessionLeases() Option { return func(c *config) { c.sessionLeases = true } }

// New returns an empty lock service.
func New(opts ...Option) *Service {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return &Service{shared: cfg.sessionLeases, locks: make(map[string]*entry), faults: make(map[string]*fault)}
}

func (s *Service) now() time.Time { return time.Now().Add(s.offset) }

// Open implements lockclient.Backend.
func (s *Service) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("memlock: ttl must be positive, got %v", ttl)
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

// LastToken returns the last fencing token the service issued.
func (s *Service) LastToken() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
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
	for _, e := range s.locks {
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

// live returns key's entry if it is held now, dropping an expired one. Caller holds mu.
func (s *Service) live(key string) *entry {
	e := s.locks[key]
	if e == nil {
		return nil
	}
	if e.session != nil {
		e.expires = e.session.expires
	}
	if !s.now().Before(e.expires) {
		delete(s.locks, key)
		close(e.changed)
		return nil
	}
	return e
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

// TryAcquire in shared mode first requires a live session lease.
func (ss *sharedSession) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	s := ss.svc
	s.mu.Lock()
	expired := !s.now().Before(ss.expires)
	if expired {
		// Like a client that re-grants its lapsed etcd lease: a new lease from now.
		// Grants of the old lease stay dead.
		for k, e := range s.locks {
			if e.session == ss.session {
				delete(s.locks, k)
				close(e.changed)
			}
		}
		ss.expires = s.now().Add(ss.ttl)
	}
	s.mu.Unlock()
	g, err := ss.session.TryAcquire(ctx, key)
	if err == nil {
		s.mu.Lock()
		if e := s.locks[key]; e != nil && e.token == g.Token {
			// A grant renews the session lease: the new lock lives a full ttl.
			if d := s.now().Add(ss.ttl); d.After(ss.expires) {
				ss.expires = d
			}
			e.session = ss.session
			e.expires = ss.expires
		}
		s.mu.Unlock()
	}
	return g, err
}

func (ss *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return lockclient.Grant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.live(key); e != nil {
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	s.seq++
	e := &entry{sess: ss.id, owner: ss.owner, token: s.seq, expires: s.now().Add(ss.ttl), changed: make(chan struct{})}
	s.locks[key] = e
	return lockclient.Grant{Key: key, Token: e.token}, nil
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
	e := s.live(g.Key)
	switch {
	case e == nil:
		return lockclient.ErrLeaseLost
	case e.sess != ss.id || e.token != g.Token:
		return lockclient.ErrNotOwner
	}
	delete(s.locks, g.Key)
	close(e.changed)
	return nil
}

func (ss *session) Close(ctx context.Context) error { return nil }
