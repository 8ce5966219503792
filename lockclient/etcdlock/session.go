package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

var errClosed = fmt.Errorf("etcdlock: session closed: %w", lockclient.ErrUnavailable)

// session is one lockclient session: one etcd lease shared by all its locks.
type session struct {
	b      *backend
	cli    *clientv3.Client
	owner  string
	ttl    time.Duration // the client's TTL: what a grant must outlive
	ttlSec int64         // the TTL asked of etcd: ttl rounded up to seconds

	grantSem chan struct{} // one lease grant at a time

	bg     context.Context // parent of background orphan clean-ups; cancelled by stop
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	lease     clientv3.LeaseID // the session lease; 0 when it must be granted (again)
	leaseTTL  time.Duration    // the TTL etcd applied to it (>= ttl)
	refreshed time.Time        // send time of its last successful grant or keep-alive
	grants    map[string]grantRec
	pending   map[string]int    // TryAcquire calls in flight, by lock name
	orphans   map[string]orphan // our keys no grant accounts for, by etcd key
	orphanSeq uint64
	cleaning  bool
	// lostEarlier is set when a lease died while the client could still trust one of its
	// grants; the next RenewSession reports ErrLeaseLost.
	lostEarlier bool
	closed      bool
}

// grantRec is a grant handed out and not yet released.
type grantRec struct {
	lease clientv3.LeaseID
	rev   int64
	start time.Time // when its TryAcquire started: no earlier than the client's send time
}

// grantData is the backend-private part of a lockclient.Grant.
type grantData struct {
	ekey  string // our etcd key
	lease clientv3.LeaseID
}

// orphan is a key of ours that may exist without a grant: the answer to its creation or
// to its deletion was lost (a timeout, a cut connection).
type orphan struct {
	key   string // lock name
	lease clientv3.LeaseID
	seq   uint64 // tells a newer record of the same key from the one a clean-up read
}

func newSession(b *backend, owner string, ttl time.Duration) *session {
	bg, cancel := context.WithCancel(context.Background())
	return &session{
		b: b, cli: b.cli, owner: owner, ttl: ttl, ttlSec: leaseSeconds(ttl + b.cfg.slack),
		grantSem: make(chan struct{}, 1),
		bg:       bg, cancel: cancel,
		grants: map[string]grantRec{}, pending: map[string]int{}, orphans: map[string]orphan{},
	}
}

// stop ends background work.
func (s *session) stop() {
	s.cancel()
	s.wg.Wait()
}

// addOrphan records that ekey may exist without a grant. Caller holds mu.
func (s *session) addOrphanLocked(ekey, key string, lease clientv3.LeaseID) {
	s.orphanSeq++
	s.orphans[ekey] = orphan{key: key, lease: lease, seq: s.orphanSeq}
}

// grant grants the session lease unless another call just did.
func (s *session) grant(ctx context.Context) error {
	select {
	case s.grantSem <- struct{}{}:
	case <-ctx.Done():
		return unavailable(ctx, "grant session lease", ctx.Err())
	}
	defer func() { <-s.grantSem }()
	s.mu.Lock()
	closed, have := s.closed, s.lease != 0
	s.mu.Unlock()
	if closed {
		return errClosed
	}
	if have {
		return nil
	}
	rc, cancel := s.b.rctx(ctx)
	defer cancel()
	sent := time.Now()
	resp, err := s.cli.Grant(rc, s.ttlSec)
	if err != nil {
		return unavailable(ctx, "grant session lease", err)
	}
	ttl := time.Duration(resp.TTL) * time.Second
	s.mu.Lock()
	closed = s.closed
	if !closed && ttl >= s.ttl {
		s.lease, s.leaseTTL, s.refreshed = resp.ID, ttl, sent
	}
	s.mu.Unlock()
	switch {
	case closed:
		s.revoke(ctx, resp.ID)
		return errClosed
	case ttl < s.ttl:
		s.revoke(ctx, resp.ID)
		return fmt.Errorf("etcdlock: etcd granted a lease of %v, shorter than the TTL %v: %w", ttl, s.ttl, lockclient.ErrUnavailable)
	}
	return nil
}

func (s *session) revoke(ctx context.Context, lease clientv3.LeaseID) error {
	rc, cancel := s.b.rctx(ctx)
	defer cancel()
	if _, err := s.cli.Revoke(rc, lease); err != nil && !isLeaseNotFound(err) {
		return unavailable(ctx, "revoke session lease", err)
	}
	return nil
}

// keepAlive renews lease once. A lease etcd no longer has yields ErrLeaseLost.
func (s *session) keepAlive(ctx context.Context, lease clientv3.LeaseID) error {
	rc, cancel := s.b.rctx(ctx)
	defer cancel()
	sent := time.Now()
	resp, err := s.cli.KeepAliveOnce(rc, lease)
	if err != nil {
		if isLeaseNotFound(err) {
			s.leaseGone(lease)
			return fmt.Errorf("etcdlock: session lease %x of %s: %w: %w", int64(lease), s.owner, lockclient.ErrLeaseLost, err)
		}
		return unavailable(ctx, "keep-alive", err)
	}
	ttl := time.Duration(resp.TTL) * time.Second
	if ttl < s.ttl {
		return fmt.Errorf("etcdlock: etcd renewed the lease for %v, shorter than the TTL %v: %w", ttl, s.ttl, lockclient.ErrUnavailable)
	}
	s.mu.Lock()
	if s.lease == lease && sent.After(s.refreshed) {
		s.refreshed, s.leaseTTL = sent, ttl
	}
	s.mu.Unlock()
	return nil
}

// leaseGone records that etcd no longer has lease: its keys are deleted, so are its
// grants. If the client could still trust one of them — the session's last successful
// renewal or the grant itself was sent less than a TTL ago, so the client's local deadline
// has not passed — the next RenewSession must tell it.
func (s *session) leaseGone(lease clientv3.LeaseID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := time.Time{}
	if s.lease == lease {
		last = s.refreshed
		s.lease = 0
	}
	now := time.Now()
	for k, g := range s.grants {
		if g.lease != lease {
			continue
		}
		delete(s.grants, k)
		if now.Before(maxTime(last, g.start).Add(s.ttl)) {
			s.lostEarlier = true
		}
	}
	for k, o := range s.orphans {
		if o.lease == lease {
			delete(s.orphans, k)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ensureLease returns the session lease, granting one if there is none. renew reports
// that its remaining time, counted from the send time of its last successful grant or
// keep-alive, may not cover a whole ttl from now: a grant on it is only valid once a
// keep-alive sent after this call began has succeeded.
func (s *session) ensureLease(ctx context.Context) (lease clientv3.LeaseID, renew bool, err error) {
	for range 2 {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, false, errClosed
		}
		lease = s.lease
		renew = time.Now().Add(s.ttl).After(s.refreshed.Add(s.leaseTTL))
		s.mu.Unlock()
		if lease != 0 {
			return lease, renew, nil
		}
		if err := s.grant(ctx); err != nil {
			return 0, false, err
		}
	}
	return 0, false, fmt.Errorf("etcdlock: could not obtain a live session lease: %w", lockclient.ErrUnavailable)
}

// TryAcquire implements lockclient.Session.
//
// When the session lease needs renewing (see ensureLease), the keep-alive runs
// concurrently with the acquiring transaction, so that it costs no extra round trip:
//   - both succeed: the lease, and with it the grant, lives at least ttl past this call;
//   - the lease is not found: it expired, taking any key just written with it; start over
//     with a new lease;
//   - the keep-alive's outcome is unknown: the grant cannot be trusted for a whole ttl, so
//     it is deleted (compare-and-delete) and the caller gets ErrUnavailable.
func (s *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	lockPfx := s.b.lockPrefix(key)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return lockclient.Grant{}, errClosed
	}
	s.pending[key]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.pending[key]--; s.pending[key] <= 0 {
			delete(s.pending, key)
		}
		s.mu.Unlock()
	}()
	start := time.Now()
	for range 4 {
		lease, renew, err := s.ensureLease(ctx)
		if err != nil {
			return lockclient.Grant{}, err
		}
		var kaDone chan error
		if renew {
			kaDone = make(chan error, 1)
			go func() { kaDone <- s.keepAlive(ctx, lease) }()
		}
		kaErr := func() error {
			if kaDone == nil {
				return nil
			}
			return <-kaDone
		}
		ekey := lockKey(lockPfx, lease)
		rc, cancel := s.b.rctx(ctx)
		resp, err := s.cli.Txn(rc).
			If(clientv3.Compare(clientv3.CreateRevision(lockPfx), "=", 0).WithPrefix()).
			Then(clientv3.OpPut(ekey, s.owner, clientv3.WithLease(lease))).
			Else(clientv3.OpGet(lockPfx, clientv3.WithFirstCreate()...)).
			Commit()
		cancel()
		kerr := kaErr()
		if err != nil {
			if isLeaseNotFound(err) {
				// Nothing was written; the lease lapsed.
				s.leaseGone(lease)
				continue
			}
			// The key may have been created: remember it so that it is cleaned up.
			s.mu.Lock()
			s.addOrphanLocked(ekey, key, lease)
			s.mu.Unlock()
			return lockclient.Grant{}, unavailable(ctx, "try-acquire", err)
		}
		if resp.Succeeded {
			rev := resp.Header.Revision // the transaction's revision: our key's create revision
			switch {
			case errors.Is(kerr, lockclient.ErrLeaseLost):
				continue // the lease expired just after the put: the key went with it
			case kerr != nil:
				if derr := s.deleteIf(ctx, ekey, rev); derr != nil {
					s.mu.Lock()
					s.addOrphanLocked(ekey, key, lease)
					s.mu.Unlock()
				}
				return lockclient.Grant{}, fmt.Errorf("etcdlock: try-acquire: the session lease could not be renewed: %w", kerr)
			}
			s.mu.Lock()
			s.grants[key] = grantRec{lease: lease, rev: rev, start: start}
			delete(s.orphans, ekey)
			s.mu.Unlock()
			return lockclient.Grant{Key: key, Token: uint64(rev), Data: grantData{ekey: ekey, lease: lease}}, nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // cannot happen: the compare and the read see the same revision
		}
		if h := kvs[0]; string(h.Key) == ekey {
			s.mu.Lock()
			g, held := s.grants[key]
			held = held && g.rev == h.CreateRevision
			concurrent := s.pending[key] > 1
			s.mu.Unlock()
			if !held && !concurrent {
				// Our own key, but no grant accounts for it: an earlier attempt was applied
				// after its caller gave up. Nobody trusts it; delete it and try again.
				if err := s.deleteIf(ctx, ekey, h.CreateRevision); err != nil {
					return lockclient.Grant{}, err
				}
				continue
			}
		}
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	return lockclient.Grant{}, fmt.Errorf("etcdlock: try-acquire: no definite answer after retries: %w", lockclient.ErrUnavailable)
}

// deleteIf deletes ekey if its create revision is still rev.
func (s *session) deleteIf(ctx context.Context, ekey string, rev int64) error {
	rc, cancel := s.b.rctx(ctx)
	defer cancel()
	_, err := s.cli.Txn(rc).
		If(clientv3.Compare(clientv3.CreateRevision(ekey), "=", rev)).
		Then(clientv3.OpDelete(ekey)).
		Commit()
	if err != nil {
		return unavailable(ctx, "delete stale key", err)
	}
	return nil
}

// Wait implements lockclient.Session: it watches the holder's key for its deletion.
func (s *session) Wait(ctx context.Context, key string) error {
	lockPfx := s.b.lockPrefix(key)
	rc, cancel := s.b.rctx(ctx)
	resp, err := s.cli.Get(rc, lockPfx, clientv3.WithFirstCreate()...)
	cancel()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		return unavailable(ctx, "wait: read holder", err)
	}
	if len(resp.Kvs) == 0 {
		return nil // free now
	}
	holder := string(resp.Kvs[0].Key)
	// WithRequireLeader: a member cut off from the cluster's leader ends the watch
	// instead of keeping it silently open.
	wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer wcancel()
	wch := s.cli.Watch(wctx, holder, clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterPut())
	for wr := range wch {
		if err := wr.Err(); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			return unavailable(ctx, "wait: watch", err)
		}
		for _, ev := range wr.Events {
			if ev.Type == clientv3.EventTypeDelete {
				return nil
			}
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return unavailable(ctx, "wait: watch", errors.New("watch channel closed"))
}

// RenewSession implements lockclient.SessionRenewer: one KeepAliveOnce of the session
// lease extends every lock of the session.
func (s *session) RenewSession(ctx context.Context) error {
	s.mu.Lock()
	if s.lostEarlier {
		s.lostEarlier = false
		s.mu.Unlock()
		return fmt.Errorf("etcdlock: an earlier session lease of %s ended while a lock on it could still be trusted: %w", s.owner, lockclient.ErrLeaseLost)
	}
	lease := s.lease
	s.mu.Unlock()
	if lease == 0 {
		return fmt.Errorf("etcdlock: session of %s has no live lease: %w", s.owner, lockclient.ErrLeaseLost)
	}
	if err := s.keepAlive(ctx, lease); err != nil {
		if errors.Is(err, lockclient.ErrLeaseLost) {
			s.mu.Lock()
			s.lostEarlier = false // reported now
			s.mu.Unlock()
		}
		return err
	}
	s.startCleanup()
	return nil
}

// Renew implements lockclient.Session for one grant (the Client uses RenewSession
// instead): it renews the grant's lease and checks that the key is still ours.
func (s *session) Renew(ctx context.Context, g lockclient.Grant) error {
	d, ok := g.Data.(grantData)
	if !ok {
		return fmt.Errorf("etcdlock: renew %q: not a grant of this backend: %w", g.Key, lockclient.ErrNotOwner)
	}
	if err := s.keepAlive(ctx, d.lease); err != nil {
		return err
	}
	rc, cancel := s.b.rctx(ctx)
	defer cancel()
	resp, err := s.cli.Get(rc, d.ekey)
	if err != nil {
		return unavailable(ctx, "renew", err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != int64(g.Token) {
		return fmt.Errorf("etcdlock: renew %q (token %d): the key is gone: %w", g.Key, g.Token, lockclient.ErrLeaseLost)
	}
	return nil
}

// Release implements lockclient.Session: a compare-and-delete on our key's create
// revision, never a blind delete.
func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	d, ok := g.Data.(grantData)
	if !ok {
		return fmt.Errorf("etcdlock: release %q: not a grant of this backend: %w", g.Key, lockclient.ErrNotOwner)
	}
	rc, cancel := s.b.rctx(ctx)
	resp, err := s.cli.Txn(rc).
		If(clientv3.Compare(clientv3.CreateRevision(d.ekey), "=", int64(g.Token))).
		Then(clientv3.OpDelete(d.ekey)).
		Else(clientv3.OpGet(d.ekey), clientv3.OpGet(s.b.lockPrefix(g.Key), clientv3.WithFirstCreate()...)).
		Commit()
	cancel()
	s.mu.Lock()
	if r, ok := s.grants[g.Key]; ok && r.rev == int64(g.Token) {
		delete(s.grants, g.Key)
	}
	if err != nil {
		// The delete may not have happened: the key would keep the lock while the
		// session lease lives. Clean it up later.
		s.addOrphanLocked(d.ekey, g.Key, d.lease)
	}
	s.mu.Unlock()
	if err != nil {
		return unavailable(ctx, "release", err)
	}
	if resp.Succeeded {
		return nil
	}
	switch {
	case len(resp.Responses[0].GetResponseRange().Kvs) > 0:
		return fmt.Errorf("etcdlock: release %q (token %d): this session took the lock again since: %w", g.Key, g.Token, lockclient.ErrNotOwner)
	case len(resp.Responses[1].GetResponseRange().Kvs) > 0:
		return fmt.Errorf("etcdlock: release %q (token %d): held by another session: %w", g.Key, g.Token, lockclient.ErrNotOwner)
	default:
		return fmt.Errorf("etcdlock: release %q (token %d): the lease expired: %w", g.Key, g.Token, lockclient.ErrLeaseLost)
	}
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
	s.mu.Unlock()
	s.stop()
	if lease == 0 {
		return nil
	}
	return s.revoke(ctx, lease)
}

// startCleanup deletes orphaned keys in the background. It only matters while the session
// lease is being renewed (otherwise the keys expire with it), so RenewSession starts it.
func (s *session) startCleanup() {
	s.mu.Lock()
	if len(s.orphans) == 0 || s.cleaning || s.closed {
		s.mu.Unlock()
		return
	}
	s.cleaning = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		ctx, cancel := s.b.rctx(s.bg) // one pass is bounded: the next renewal starts another
		defer cancel()
		s.cleanupOrphans(ctx)
		s.mu.Lock()
		s.cleaning = false
		s.mu.Unlock()
	}()
}

func (s *session) cleanupOrphans(ctx context.Context) {
	s.mu.Lock()
	cur := s.lease
	list := make(map[string]orphan, len(s.orphans))
	for k, o := range s.orphans {
		list[k] = o
	}
	s.mu.Unlock()
	// forget drops the record this pass read, not a newer one made meanwhile (a new
	// attempt that failed the same way after the key was read).
	forget := func(ekey string) {
		s.mu.Lock()
		if o, ok := s.orphans[ekey]; ok && o.seq == list[ekey].seq {
			delete(s.orphans, ekey)
		}
		s.mu.Unlock()
	}
	for ekey, o := range list {
		if o.lease != cur {
			// Its lease was found gone (the session moved to a new one): so is the key.
			forget(ekey)
			continue
		}
		rc, cancel := s.b.rctx(ctx)
		resp, err := s.cli.Get(rc, ekey)
		cancel()
		if err != nil {
			return // next renewal
		}
		if len(resp.Kvs) == 0 {
			forget(ekey)
			continue
		}
		rev := resp.Kvs[0].CreateRevision
		s.mu.Lock()
		g, held := s.grants[o.key]
		held = held && g.rev == rev
		busy := s.pending[o.key] > 0
		s.mu.Unlock()
		switch {
		case held:
			forget(ekey) // a grant accounts for it
		case busy:
			// A TryAcquire of this lock is in flight and may be about to return this
			// key as its grant: leave it for the next renewal.
		default:
			// No grant has revision rev, and none can get it any more (a new grant
			// creates a new revision): delete it if it is still that key.
			if s.deleteIf(ctx, ekey, rev) != nil {
				return
			}
			forget(ekey)
		}
	}
}
