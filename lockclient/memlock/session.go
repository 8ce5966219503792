// A client's session: acquire (immediate or queued), wait, renew, release.

package memlock

import (
	"context"
	"fmt"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

type session struct {
	svc     *Service
	id      uint64
	owner   string
	ttl     time.Duration
	expires time.Time // the session lease (shared mode), guarded by svc.mu
	// renewed is the local time of the last successful renewal or grant of the session
	// lease (shared mode), guarded by svc.mu: the client trusts the lease's grants until
	// at most a ttl after it.
	renewed time.Time
	// lostEarlier is set (shared mode) when a grant of the session ended at the service
	// while the client could still trust it; the next RenewSession reports ErrLeaseLost.
	// Guarded by svc.mu.
	lostEarlier bool
}

// sharedSession is a session whose grants share its lease.
type sharedSession struct{ *session }

// RenewSession implements lockclient.SessionRenewer. It fails with ErrLeaseLost when
// the session lease has expired, and also, once, when a grant of the session ended at
// the service (its lease expired by the service's clock) while the client could still
// trust it, even if a later TryAcquire gave the session a new lease: the renewal would
// otherwise extend, at the client, a grant the service no longer holds.
func (ss *sharedSession) RenewSession(ctx context.Context) error {
	s := ss.svc
	if err := s.gate(ctx, ss.owner); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals++
	if ss.lostEarlier {
		ss.lostEarlier = false
		return fmt.Errorf("memlock: an earlier session lease of %s expired while a lock on it could still be trusted: %w", ss.owner, lockclient.ErrLeaseLost)
	}
	if !s.now().Before(ss.expires) {
		s.endSessionLeaseLocked(ss.session, false) // its grants end, reported now
		return lockclient.ErrLeaseLost
	}
	ss.expires = s.now().Add(ss.ttl)
	ss.renewed = time.Now()
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
	e, err := s.grantLocked(ss, key)
	if err != nil {
		return lockclient.Grant{}, err
	}
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
		e, err := s.grantLocked(ss, key)
		s.mu.Unlock()
		if err != nil {
			return lockclient.Grant{}, time.Time{}, err
		}
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
			if w.err != nil {
				return lockclient.Grant{}, time.Time{}, w.err
			}
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
				if w.err == nil {
					s.releaseLocked(ss, w.grant)
				}
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

func (ss *session) Close(ctx context.Context) error { return nil }
