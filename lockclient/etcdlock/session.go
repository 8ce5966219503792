package etcdlock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

// This file holds the session's state and its life cycle. The session lease is handled in
// lease.go, the lock operations in locks.go and the clean-up of orphaned keys in
// orphans.go.

var errClosed = fmt.Errorf("etcdlock: session closed: %w", lockclient.ErrUnavailable)

// session is one lockclient session: one etcd lease shared by all its locks.
type session struct {
	b         *Backend
	serviceID string // the Backend's identity, read at Open (ServiceID)
	cli       *clientv3.Client
	owner     string
	ttl       time.Duration // the client's TTL: what a grant must outlive
	ttlSec    int64         // the TTL asked of etcd: ttl rounded up to seconds

	grantSem chan struct{} // one lease grant at a time

	bg     context.Context // parent of background orphan clean-ups; cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	lease     clientv3.LeaseID // the session lease; 0 when it must be granted (again)
	leaseTTL  time.Duration    // the TTL etcd applied to it (>= ttl)
	refreshed time.Time        // send time of its last successful grant or keep-alive
	grants    map[string]grantRec
	pending   map[string]int    // TryAcquire calls and enqueues in flight, by lock name
	queue     map[string]*entry // this session's place in a lock's queue, by lock name
	// contended records, by lock name, when this session last waited for the lock or
	// handed it over: a TryAcquire soon after first checks with a read whether the lock
	// is free, instead of sending a write that would only find it taken.
	contended map[string]time.Time
	orphans   map[string]orphan // our keys no grant accounts for, by etcd key
	orphanSeq uint64
	sweeping  bool // the orphan sweeper runs (orphans.go)
	// lostEarlier is set when a lease died while the client could still trust one of its
	// grants; the next RenewSession reports ErrLeaseLost.
	lostEarlier bool
	closed      bool
}

// grantRec is a grant handed out and not yet released.
type grantRec struct {
	lease clientv3.LeaseID
	rev   int64     // the revision of the write that granted the lock (our key's mod revision); the token is it plus the floor offset
	start time.Time // when its TryAcquire started: no earlier than the client's send time
	// next is the key waiting behind ours, read while the lock is held (on a contended
	// lock), so that Release need not read it; nil when unknown.
	next *mvccpb.KeyValue
}

// grantData is the backend-private part of a lockclient.Grant.
type grantData struct {
	ekey  string // our etcd key
	lease clientv3.LeaseID
	rev   int64 // the revision of the granting write: Renew and Release compare our key's mod revision with it
}

func newSession(b *Backend, owner string, ttl time.Duration) *session {
	bg, cancel := context.WithCancel(context.Background())
	if owner == "" {
		owner = "-" // a grant's value is its owner, and an empty value is never a grant's
	}
	return &session{
		b: b, cli: b.cli, owner: owner, ttl: ttl, ttlSec: leaseSeconds(ttl + b.cfg.slack),
		grantSem: make(chan struct{}, 1),
		bg:       bg, cancel: cancel,
		grants: map[string]grantRec{}, pending: map[string]int{}, queue: map[string]*entry{}, contended: map[string]time.Time{}, orphans: map[string]orphan{},
	}
}

// stop ends background work.
func (s *session) stop() {
	s.cancel()
	s.wg.Wait()
}

// Close implements lockclient.Session: it revokes the session lease, which deletes every
// key still attached to it (best effort within ctx; otherwise the lease expires).
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	lease := s.lease
	s.lease = 0
	for name, e := range s.queue {
		s.dropEntryLocked(name, e) // the revoke below deletes the keys
	}
	s.mu.Unlock()
	s.stop()
	if lease == 0 {
		return nil
	}
	return s.revoke(ctx, lease)
}

// markContendedLocked records that lock name was just contended. Caller holds mu.
func (s *session) markContendedLocked(name string) {
	now := time.Now()
	if len(s.contended) >= 1024 {
		for k, t := range s.contended {
			if now.Sub(t) > s.ttl {
				delete(s.contended, k)
			}
		}
	}
	s.contended[name] = now
}

// recentlyContended reports whether lock name was contended within the last TTL.
func (s *session) recentlyContended(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.contended[name]
	return ok && time.Since(t) < s.ttl
}

// grantNeedsRenewal reports whether a grant made now on the session lease would need a
// keep-alive first (see ensureLease).
func (s *session) grantNeedsRenewal() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lease != 0 && time.Now().Add(s.ttl).After(s.refreshed.Add(s.leaseTTL))
}
