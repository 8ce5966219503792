package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

// TryAcquire implements lockclient.Session. Without a place in the lock's queue (no Wait
// of this session is waiting on it) it is one transaction that takes the lock only if
// nobody holds it or waits for it, and otherwise leaves nothing behind (ErrHeld). With a
// place, it takes the lock if our key was handed the lock or is first in line (claim).
//
// When the session lease needs renewing (see ensureLease), the keep-alive runs
// concurrently with the acquiring transaction, so that it costs no extra round trip:
//   - both succeed: the lease, and with it the grant, lives at least ttl past this call;
//   - the lease is not found: it expired, taking any key just written with it; start over
//     with a new lease;
//   - the keep-alive's outcome is unknown: the grant cannot be trusted for a whole ttl, so
//     it is not handed out and the caller gets ErrUnavailable (a new grant's key is
//     deleted; a queued key keeps its place and is written again by the next attempt).
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
		s.donePending(key)
		s.kickSweeper() // orphans of this call are only deleted once it is over
	}()
	start := time.Now()
	for range 4 {
		s.mu.Lock()
		e := s.queue[key]
		s.mu.Unlock()
		var (
			g     lockclient.Grant
			retry bool
			err   error
		)
		if e != nil {
			g, retry, err = s.claim(ctx, key, lockPfx, e, start)
		} else {
			g, retry, err = s.tryAcquireOnce(ctx, key, lockPfx, start)
		}
		if !retry {
			return g, err
		}
	}
	return lockclient.Grant{}, fmt.Errorf("etcdlock: try-acquire: no definite answer after retries: %w", lockclient.ErrUnavailable)
}

// startKeepAlive renews lease concurrently when renew is set; the returned function
// waits for the outcome (nil when none ran).
func (s *session) startKeepAlive(ctx context.Context, lease clientv3.LeaseID, renew bool) func() error {
	if !renew {
		return func() error { return nil }
	}
	result := make(chan error, 1)
	go func() { result <- s.keepAlive(ctx, lease) }()
	return func() error { return <-result }
}

// tryAcquireOnce makes one attempt of TryAcquire without a place in the queue (start is
// when TryAcquire began). retry reports that the attempt came to no answer but another
// one may: the session lease lapsed, or an orphaned key of ours was in the way and has
// been deleted.
func (s *session) tryAcquireOnce(ctx context.Context, key, lockPfx string, start time.Time) (g lockclient.Grant, retry bool, err error) {
	lease, renew, err := s.ensureLease(ctx)
	if err != nil {
		return lockclient.Grant{}, false, err
	}
	ekey := lockKey(lockPfx, lease)
	free := clientv3.Compare(clientv3.CreateRevision(lockPfx), "=", 0).WithPrefix()
	if s.recentlyContended(key) {
		// Likely taken: ask with a read (no write through consensus) first.
		reqCtx, cancel := s.b.requestContext(ctx)
		resp, err := s.cli.Txn(reqCtx).If(free).Else(clientv3.OpGet(ekey)).Commit()
		cancel()
		if err != nil {
			return lockclient.Grant{}, false, unavailable(ctx, "try-acquire", err)
		}
		if !resp.Succeeded {
			return s.heldOrOrphan(ctx, key, ekey, resp)
		}
	}
	awaitKeepAlive := s.startKeepAlive(ctx, lease, renew)
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		If(free).
		Then(clientv3.OpPut(ekey, s.owner, clientv3.WithLease(lease)), s.b.floorGet()).
		Else(clientv3.OpGet(ekey)).
		Commit()
	cancel()
	keepAliveErr := awaitKeepAlive()
	if err != nil {
		if isLeaseNotFound(err) {
			// Nothing was written; the lease lapsed.
			s.leaseGone(lease)
			return lockclient.Grant{}, true, nil
		}
		// The key may have been created, now or later: the sweeper deletes it.
		s.mu.Lock()
		s.addOrphanLocked(ekey, key, lease)
		s.mu.Unlock()
		return lockclient.Grant{}, false, unavailable(ctx, "try-acquire", err)
	}
	if resp.Succeeded {
		rev := resp.Header.Revision // the transaction's revision: our key's create (and mod) revision
		off, ferr := s.b.grantOffset(floorKV(resp.Responses[1]))
		switch {
		case errors.Is(keepAliveErr, lockclient.ErrLeaseLost):
			return lockclient.Grant{}, true, nil // the lease expired just after the put: the key went with it
		case keepAliveErr != nil || ferr != nil:
			cause := fmt.Errorf("the session lease could not be renewed: %w", keepAliveErr)
			if keepAliveErr == nil {
				cause = ferr // the grant cannot be priced: give it back
			}
			if derr := s.deleteIfMod(ctx, ekey, rev); derr != nil {
				s.mu.Lock()
				s.addOrphanLocked(ekey, key, lease)
				s.mu.Unlock()
			}
			if keepAliveErr == nil && isLowOffset(ferr) {
				// An offset not seeded for WithMinToken: seeded, the next attempt is priced above it.
				if err := s.b.restoreMinToken(ctx); err != nil {
					return lockclient.Grant{}, false, fmt.Errorf("etcdlock: try-acquire: %w", err)
				}
				return lockclient.Grant{}, true, nil
			}
			return lockclient.Grant{}, false, fmt.Errorf("etcdlock: try-acquire: %w", cause)
		}
		s.mu.Lock()
		s.grants[key] = grantRec{lease: lease, rev: rev, start: start}
		delete(s.orphans, ekey)
		s.mu.Unlock()
		return lockclient.Grant{Key: key, Token: token(off, rev), Data: grantData{ekey: ekey, lease: lease, rev: rev}}, false, nil
	}
	return s.heldOrOrphan(ctx, key, ekey, resp)
}

// heldOrOrphan answers a TryAcquire that found the lock taken (resp's first answer is
// the read of our own key ekey): ErrHeld, unless the key in the way is ours and nothing
// accounts for it — then it is deleted, and retry is set.
func (s *session) heldOrOrphan(ctx context.Context, key, ekey string, resp *clientv3.TxnResponse) (lockclient.Grant, bool, error) {
	if own := resp.Responses[0].GetResponseRange().Kvs; len(own) > 0 {
		kv := own[0]
		s.mu.Lock()
		g, held := s.grants[key]
		held = held && g.rev == kv.ModRevision
		queued := s.queue[key] != nil && s.queue[key].ekey == ekey
		concurrent := s.pending[key] > 1
		s.mu.Unlock()
		if !held && !queued && !concurrent {
			// Our own key, but nothing accounts for it: an earlier attempt was applied
			// after its caller gave up. Nobody trusts it; delete it and try again.
			if err := s.deleteIfMod(ctx, ekey, kv.ModRevision); err != nil {
				return lockclient.Grant{}, false, err
			}
			return lockclient.Grant{}, true, nil
		}
	}
	return lockclient.Grant{}, false, lockclient.ErrHeld
}

// claim makes one attempt of TryAcquire through this session's place e in the lock's
// queue: it hands out the grant a releaser gave our key, or takes the lock if our key is
// first in line — one transaction that writes our key again, conditioned on its being
// unchanged and no key of the lock being older; that write's revision is the token.
func (s *session) claim(ctx context.Context, key, lockPfx string, e *entry, start time.Time) (g lockclient.Grant, retry bool, err error) {
	lease, renew, err := s.ensureLease(ctx)
	if err != nil {
		return lockclient.Grant{}, false, err
	}
	if lease != e.lease { // e's lease ended, and its key with it
		s.mu.Lock()
		s.dropEntryLocked(key, e)
		s.mu.Unlock()
		return lockclient.Grant{}, true, nil
	}
	s.mu.Lock()
	handed, handedFloor, floorKnown := e.granted, e.grantedFloor, e.floorKnown
	s.mu.Unlock()
	if handed != 0 {
		// Wait saw the releaser hand the lock to our key: no request but, if the lease
		// might not cover a whole TTL from now, a keep-alive.
		if err := s.startKeepAlive(ctx, lease, renew)(); err != nil {
			if errors.Is(err, lockclient.ErrLeaseLost) {
				return lockclient.Grant{}, true, nil // leaseGone dropped the entry
			}
			return lockclient.Grant{}, false, err
		}
		return s.priceAndHandOut(ctx, key, e, handed, handedFloor, floorKnown, start)
	}
	awaitKeepAlive := s.startKeepAlive(ctx, lease, renew)
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		If(clientv3.Compare(clientv3.ModRevision(e.ekey), "=", e.mod),
			clientv3.Compare(clientv3.CreateRevision(lockPfx), ">", e.rev-1).WithPrefix()).
		Then(clientv3.OpPut(e.ekey, s.owner, clientv3.WithIgnoreLease()), s.b.floorGet()).
		Else(clientv3.OpGet(e.ekey), s.b.floorGet()).
		Commit()
	cancel()
	keepAliveErr := awaitKeepAlive()
	if err != nil {
		if isLeaseNotFound(err) {
			s.leaseGone(lease)
			return lockclient.Grant{}, true, nil
		}
		// The write may have landed: the key keeps its place, and the next claim (or
		// the clean-up when the caller gives up) finds it changed.
		return lockclient.Grant{}, false, unavailable(ctx, "try-acquire", err)
	}
	rev := resp.Header.Revision
	floor := floorKV(resp.Responses[1])
	if !resp.Succeeded {
		own := resp.Responses[0].GetResponseRange().Kvs
		switch {
		case len(own) == 0 || own[0].CreateRevision != e.rev:
			s.mu.Lock()
			s.dropEntryLocked(key, e) // our key is gone: start over
			s.mu.Unlock()
			return lockclient.Grant{}, true, nil
		case own[0].ModRevision == e.mod:
			return lockclient.Grant{}, false, lockclient.ErrHeld // someone is ahead
		}
		// Our key was written since it was queued: a releaser handed the lock to it, or
		// an earlier claim whose answer was lost landed. Either way the lock was granted
		// to this key at that revision, and nobody has been handed the grant yet.
		rev = own[0].ModRevision
	}
	switch {
	case errors.Is(keepAliveErr, lockclient.ErrLeaseLost):
		return lockclient.Grant{}, true, nil // leaseGone dropped the entry
	case keepAliveErr != nil:
		s.mu.Lock()
		if s.queue[key] == e {
			e.granted, e.grantedFloor, e.floorKnown = rev, floor, true // hand it out once the lease is renewed
		}
		s.mu.Unlock()
		return lockclient.Grant{}, false, fmt.Errorf("etcdlock: try-acquire: the session lease could not be renewed: %w", keepAliveErr)
	}
	return s.priceAndHandOut(ctx, key, e, rev, floor, true, start)
}

// priceAndHandOut hands out e, granted at revision rev, with the token of that revision:
// the floor offset in force at rev (floor is the floor key read at rev or later, when
// known) plus rev. If that offset cannot be read (etcd compacted rev away meanwhile),
// the grant is not handed out: e leaves the queue, its key is left to the orphan sweeper,
// and the caller gets ErrUnavailable.
func (s *session) priceAndHandOut(ctx context.Context, key string, e *entry, rev int64, floor *mvccpb.KeyValue, known bool, start time.Time) (lockclient.Grant, bool, error) {
	off, err := s.b.offsetAt(ctx, s.cli, rev, floor, known)
	if err != nil {
		s.mu.Lock()
		if s.queue[key] == e {
			s.dropEntryLocked(key, e)
			s.addOrphanLocked(e.ekey, key, e.lease)
		}
		s.mu.Unlock()
		s.kickSweeper()
		// An offset not seeded for WithMinToken at rev: seeded, the next attempt (without a
		// place in the queue: the key just left to the sweeper is deleted as an orphan) is
		// priced above it.
		if isLowOffset(err) {
			if rerr := s.b.restoreMinToken(ctx); rerr != nil {
				return lockclient.Grant{}, false, fmt.Errorf("etcdlock: try-acquire: %w", rerr)
			}
			return lockclient.Grant{}, true, nil
		}
		return lockclient.Grant{}, false, fmt.Errorf("etcdlock: try-acquire: %w", err)
	}
	return s.handOut(ctx, key, e, rev, off, start)
}

// handOut turns e, granted at revision rev under floor offset off, into this session's
// grant, unless a concurrent call handed it out already or its caller gave up (e left
// the queue, and its key is being deleted).
func (s *session) handOut(ctx context.Context, key string, e *entry, rev int64, off uint64, start time.Time) (lockclient.Grant, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue[key] != e {
		if err := ctx.Err(); err != nil {
			return lockclient.Grant{}, false, unavailable(ctx, "try-acquire", err)
		}
		return lockclient.Grant{}, false, lockclient.ErrHeld
	}
	s.dropEntryLocked(key, e)
	s.grants[key] = grantRec{lease: e.lease, rev: rev, start: start}
	delete(s.orphans, e.ekey)
	s.prefetchNextLocked(key, e.ekey, rev)
	return lockclient.Grant{Key: key, Token: token(off, rev), Data: grantData{ekey: e.ekey, lease: e.lease, rev: rev}}, false, nil
}

// prefetchNextLocked reads, in the background, which key waits behind a grant that came
// through the queue (the lock is contended), so that its Release can hand the lock over
// without reading first. Caller holds mu.
func (s *session) prefetchNextLocked(key, ekey string, rev int64) {
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := s.b.requestContext(s.bg)
		next := s.nextInLine(ctx, s.b.lockPrefix(key), ekey, rev)
		cancel()
		if next == nil {
			return
		}
		s.mu.Lock()
		if r, ok := s.grants[key]; ok && r.rev == rev && r.next == nil {
			r.next = next
			s.grants[key] = r
		}
		s.mu.Unlock()
	}()
}

// deleteIfMod deletes ekey if its mod revision is still rev: that version of the key,
// never a later write to it. (Not its create revision: one etcd key serves every attempt
// of a session lease on a lock, and a later attempt may take over the same key and write
// its grant to it; see deleteLeft.)
func (s *session) deleteIfMod(ctx context.Context, ekey string, rev int64) error {
	reqCtx, cancel := s.b.requestContext(ctx)
	defer cancel()
	cmp := clientv3.Compare(clientv3.ModRevision(ekey), "=", rev)
	if _, err := s.cli.Txn(reqCtx).If(cmp).Then(clientv3.OpDelete(ekey)).Commit(); err != nil {
		return unavailable(ctx, "delete stale key", err)
	}
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
	reqCtx, cancel := s.b.requestContext(ctx)
	defer cancel()
	resp, err := s.cli.Get(reqCtx, d.ekey)
	if err != nil {
		return unavailable(ctx, "renew", err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != d.rev {
		return fmt.Errorf("etcdlock: renew %q (token %d): the key is gone: %w", g.Key, g.Token, lockclient.ErrLeaseLost)
	}
	return nil
}

// Release implements lockclient.Session: a compare-and-delete on our key's mod revision
// (the grant's revision, kept in its Data), never a blind delete. If a key waits just behind ours, the same
// transaction hands the lock to it (writes it with its owner's name: that write's
// revision, the one of the release, is its token), so the next holder needs no
// transaction of its own. Who is next is read first from the member's local state (a
// serializable read, no consensus round): a stale answer only makes the hand-over's
// compare fail, and the release then goes on alone; the waiter, woken by our key's
// deletion, takes the lock itself.
func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	d, ok := g.Data.(grantData)
	if !ok {
		return fmt.Errorf("etcdlock: release %q: not a grant of this backend: %w", g.Key, lockclient.ErrNotOwner)
	}
	lockPfx := s.b.lockPrefix(g.Key)
	mine := clientv3.Compare(clientv3.ModRevision(d.ekey), "=", d.rev)
	release := []clientv3.Op{clientv3.OpDelete(d.ekey)}
	refused := []clientv3.Op{clientv3.OpGet(d.ekey), clientv3.OpGet(lockPfx, clientv3.WithFirstCreate()...)}
	reqCtx, cancel := s.b.requestContext(ctx)
	txn := s.cli.Txn(reqCtx)
	handOver := false
	s.mu.Lock()
	next := s.grants[g.Key].next
	if s.grants[g.Key].rev != d.rev {
		next = nil
	}
	s.mu.Unlock()
	if next == nil && s.recentlyContended(g.Key) {
		// (On a lock this session has not seen contended, a waiter that queued meanwhile
		// takes the lock itself once woken; the uncontended release stays one request.)
		next = s.nextInLine(reqCtx, lockPfx, d.ekey, d.rev)
	}
	if next != nil {
		handOver = true
		s.mu.Lock()
		s.markContendedLocked(g.Key)
		s.mu.Unlock()
		txn = txn.If(mine, clientv3.Compare(clientv3.ModRevision(string(next.Key)), "=", next.ModRevision)).
			Then(clientv3.OpDelete(d.ekey), clientv3.OpPut(string(next.Key), strings.TrimPrefix(string(next.Value), queuedPrefix), clientv3.WithIgnoreLease())).
			Else(clientv3.OpTxn([]clientv3.Cmp{mine}, release, refused))
	} else {
		txn = txn.If(mine).Then(release...).Else(refused...)
	}
	resp, err := txn.Commit()
	cancel()
	s.mu.Lock()
	if r, ok := s.grants[g.Key]; ok && r.rev == d.rev {
		delete(s.grants, g.Key)
	}
	if err != nil {
		// The delete may not have happened: the key would keep the lock while the
		// session lease lives. Clean it up later.
		s.addOrphanLocked(d.ekey, g.Key, d.lease)
	}
	s.mu.Unlock()
	if err != nil {
		s.kickSweeper()
		return unavailable(ctx, "release", err)
	}
	if resp.Succeeded {
		return nil
	}
	if handOver {
		inner := resp.Responses[0].GetResponseTxn()
		if inner.Succeeded {
			return nil
		}
		resp = (*clientv3.TxnResponse)(inner)
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

// nextInLine returns the key waiting just behind ours, if the member's local state says
// ours (at mod revision rev) is first and the next one is still waiting; nil otherwise
// or on any error.
func (s *session) nextInLine(ctx context.Context, lockPfx, ekey string, rev int64) *mvccpb.KeyValue {
	resp, err := s.cli.Get(ctx, lockPfx, clientv3.WithPrefix(), clientv3.WithSerializable(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(2))
	if err != nil || len(resp.Kvs) < 2 {
		return nil
	}
	first, next := resp.Kvs[0], resp.Kvs[1]
	if string(first.Key) != ekey || first.ModRevision != rev || !strings.HasPrefix(string(next.Value), queuedPrefix) {
		return nil
	}
	return next
}
