// Expiry, grants and the fair handoff of a key to its first waiter.

package memlock

import (
	"fmt"
	"math"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// waiter is one AcquireQueued call in a key's queue.
type waiter struct {
	ss      *session
	granted chan struct{} // closed when the key is handed to this waiter
	grant   lockclient.Grant
	at      time.Time // local time of the handoff: when the grant took effect
	err     error     // set instead of grant when the token counter is at its end
}

type entry struct {
	session *session // set in shared mode: the grant lives as long as the session lease
	sess    uint64
	owner   string
	token   uint64
	expires time.Time
	granted time.Time     // local time of the grant
	changed chan struct{} // closed when this grant ends (release, expiry noticed, clock jump)
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
		noteExpiredLocked(e)
		return s.handOff(key)
	}
	return e
}

// noteExpiredLocked records, for a grant e that hung on its session's lease (shared
// mode) and has just been dropped because that lease expired, whether the client could
// still trust it: less than a ttl has passed on the local clock since the grant or the
// session's last renewal (the service's clock ran ahead: Advance). Then the session's next
// RenewSession must report the loss. Caller holds mu.
func noteExpiredLocked(e *entry) {
	ss := e.session
	if ss == nil {
		return
	}
	last := ss.renewed
	if e.granted.After(last) {
		last = e.granted
	}
	if time.Now().Before(last.Add(ss.ttl)) {
		ss.lostEarlier = true
	}
}

// handOff grants the free key to the first waiter of its queue, if any, and wakes that
// waiter only. Caller holds mu; the key is not held.
func (s *Service) handOff(key string) *entry {
	q := s.queues[key]
	if len(q) == 0 {
		return nil
	}
	for len(q) > 0 {
		w := q[0]
		s.dequeue(key, w)
		e, err := s.grantLocked(w.ss, key)
		if err != nil { // the counter is at its end, or retired: this waiter, and every next one, fails
			w.err = err
			close(w.granted)
			q = s.queues[key]
			continue
		}
		w.grant, w.at = lockclient.Grant{Key: key, Token: e.token}, time.Now()
		close(w.granted)
		return e
	}
	return nil
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
//
// A counter at 2^63−1, the largest token a guarded BIGINT column can hold, grants
// nothing: errExhausted (red-team rt28b F3), as redislock and sqllock do.
//
// A retired service (Retire) grants nothing: an error wrapping lockclient.ErrRetired.
func (s *Service) grantLocked(ss *session, key string) (*entry, error) {
	if s.retired {
		return nil, fmt.Errorf("memlock: grant %q: %w", key, lockclient.ErrRetired)
	}
	if s.seq >= math.MaxInt64 {
		return nil, fmt.Errorf("memlock: grant %q: %w: the token counter is at its end (2^63-1), no later token can be greater; "+
			"a new Service (with WithMinToken above every token the guarded tables hold) is needed", key, lockclient.ErrInvalidConfig)
	}
	if s.shared {
		s.refreshSessionLocked(ss)
	}
	s.seq++
	e := &entry{sess: ss.id, owner: ss.owner, token: s.seq, expires: s.now().Add(ss.ttl), granted: time.Now(), changed: make(chan struct{})}
	if s.shared {
		if d := s.now().Add(ss.ttl); d.After(ss.expires) {
			ss.expires = d
		}
		ss.renewed = e.granted
		e.session = ss
		e.expires = ss.expires
	}
	s.locks[key] = e
	return e, nil
}

// refreshSessionLocked replaces the lapsed lease of session ss (shared mode) by a new
// one: the grants of the old lease end, and if the client could still trust one of them
// the session's next RenewSession reports ErrLeaseLost (see noteExpiredLocked), so the
// new lease does not extend them at the client. Caller holds mu.
func (s *Service) refreshSessionLocked(ss *session) {
	if s.now().Before(ss.expires) {
		return
	}
	s.endSessionLeaseLocked(ss, true)
	ss.expires = s.now().Add(ss.ttl)
}

// endSessionLeaseLocked ends every grant of the lapsed lease of session ss (shared mode),
// handing their keys to their first waiters. With note, a grant the client could still
// trust makes the next RenewSession report ErrLeaseLost; without, the caller reports the
// loss itself. Caller holds mu.
func (s *Service) endSessionLeaseLocked(ss *session, note bool) {
	var freed []string
	for k, e := range s.locks {
		if e.session == ss {
			delete(s.locks, k)
			close(e.changed)
			if note {
				noteExpiredLocked(e)
			}
			freed = append(freed, k)
		}
	}
	for _, k := range freed {
		s.handOff(k)
	}
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
