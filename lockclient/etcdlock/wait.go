package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Waiting in line (see "Waiting in line" in the package documentation): Wait and
// AcquireQueued put the session's key in the lock's queue (queue.go), watch only the key
// just ahead of it, and take the lock when it is handed over or theirs is first.

// Wait implements lockclient.Session. The first Wait on a lock puts this session's key
// in the lock's queue; every Wait then watches only the key just ahead of ours and
// returns when it is gone (released, expired or left), when the lock was handed to our
// key, or when ours is first: the caller's next TryAcquire takes the lock. A caller whose
// context ends leaves the queue (see leave). While this session holds the lock itself
// (another caller of the same Client), Wait watches that grant's key instead.
func (s *session) Wait(ctx context.Context, key string) error {
	lockPfx := s.b.lockPrefix(key)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	g, held := s.grants[key]
	e := s.queue[key]
	if e != nil {
		s.registerLocked(e, ctx)
	}
	s.mu.Unlock()
	wctx, cancel := s.waitContext(ctx)
	defer cancel()
	if held {
		return s.waitErr(ctx, "wait", s.waitOwnRelease(wctx, lockKey(lockPfx, g.lease), g.rev))
	}
	if e == nil {
		var err error
		if e, err = s.enqueue(ctx, key, lockPfx); err != nil || e == nil {
			return err
		}
	}
	return s.waitTurn(ctx, wctx, e, lockPfx)
}

// waitContext derives the context of a wait: it ends with ctx or when the session
// closes, and its watches only go through a member connected to the leader
// (WithRequireLeader: a member cut off from the leader ends the watch rather than keep it
// silently open).
func (s *session) waitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stop := context.AfterFunc(s.bg, cancel)
	return wctx, func() { stop(); cancel() }
}

// waitErr turns a wait's error into the Session convention: ctx's error when it ended,
// errClosed when the session closed, otherwise ErrUnavailable.
func (s *session) waitErr(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case s.bg.Err() != nil:
		return errClosed
	case errors.Is(err, errLeaseEnded):
		return nil // the caller's next TryAcquire starts over on a new lease
	}
	return unavailable(ctx, op, err)
}

// errLeaseEnded ends a wait whose key went with its session lease.
var errLeaseEnded = errors.New("etcdlock: the session lease ended while waiting")

// waitTurn waits until e's turn may have come. Each round is one read — is our key
// still waiting, and which key is just ahead of it? — and one watch of that key only,
// for its deletion, so that a release wakes one waiter, not all (no herd).
func (s *session) waitTurn(ctx, wctx context.Context, e *entry, lockPfx string) error {
	aheadOpts := append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(e.rev-1))
	s.mu.Lock()
	ahead, aheadCreate, aheadRev, first := e.ahead, e.aheadCreate, e.aheadRev, e.first
	e.ahead, e.first = "", false
	s.mu.Unlock()
	if first {
		return nil // first in the queue when enqueued: TryAcquire takes the lock
	}
	if ahead != "" {
		// The enqueuing transaction saw the key ahead of ours: watch it at once.
		if err := s.watchDelete(wctx, ahead, aheadCreate, aheadRev+1, e); err != nil {
			return s.waitErr(ctx, "wait: watch", err)
		}
	}
	woken := ahead != ""
	for {
		// Woken by a deletion, most likely a hand-over: if the grant will need the lease
		// renewed, renew it while reading, not after.
		var awaitKeepAlive func() error
		if woken && s.grantNeedsRenewal() {
			awaitKeepAlive = s.startKeepAlive(wctx, e.lease, true)
		}
		if woken && s.handedOver(wctx, e) {
			if awaitKeepAlive != nil {
				_ = awaitKeepAlive()
			}
			return nil
		}
		reqCtx, cancel := s.b.requestContext(wctx)
		resp, err := s.cli.Txn(reqCtx).
			If(clientv3.Compare(clientv3.ModRevision(e.ekey), "=", e.mod)).
			Then(clientv3.OpGet(lockPfx, aheadOpts...)).
			Else(clientv3.OpGet(e.ekey), s.b.floorGet()).
			Commit()
		cancel()
		if awaitKeepAlive != nil {
			_ = awaitKeepAlive() // a lost lease drops the entry (leaseGone); other errors: TryAcquire renews
		}
		if err != nil {
			return s.waitErr(ctx, "wait: read queue", err)
		}
		if !resp.Succeeded {
			kvs := resp.Responses[0].GetResponseRange().Kvs
			s.mu.Lock()
			if len(kvs) == 0 || kvs[0].CreateRevision != e.rev {
				// Our key is gone (its lease ended, or it was deleted): start over.
				s.dropEntryLocked(e.name, e)
			} else if s.queue[e.name] == e && e.granted == 0 {
				// the releaser handed the lock to us
				e.granted, e.grantedFloor, e.floorKnown = kvs[0].ModRevision, floorKV(resp.Responses[1]), true
			}
			s.mu.Unlock()
			return nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return nil // first in the queue: TryAcquire takes the lock
		}
		if err := s.watchDelete(wctx, string(kvs[0].Key), kvs[0].CreateRevision, resp.Header.Revision+1, e); err != nil {
			return s.waitErr(ctx, "wait: watch", err)
		}
		woken = true
	}
}

// waitOwnRelease returns when this session's grant (ekey at mod revision token) is
// released or lost.
func (s *session) waitOwnRelease(wctx context.Context, ekey string, token int64) error {
	reqCtx, cancel := s.b.requestContext(wctx)
	resp, err := s.cli.Get(reqCtx, ekey)
	cancel()
	if err != nil {
		return err
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != token {
		return nil
	}
	return s.watchDelete(wctx, ekey, resp.Kvs[0].CreateRevision, resp.Header.Revision+1, nil)
}

// watchDelete returns when key, the incarnation created at revision created and seen
// alive at revision rev-1, is deleted. While e waits, it also keeps the session lease
// alive: the Client's watchdog renews it only while a lock is held, and a waiting key
// lives as long as the lease.
//
// The watch starts at the current revision, not at rev: etcd serves a watch that starts
// in the past from its "unsynced" set, caught up by a loop that runs every 100ms, and on
// a busy lock the revision has nearly always moved on by the time the watch is created —
// each handoff would then wait for that loop. So the watch is created from now
// (WithCreatedNotify tells from which revision), and if the revision moved since rev-1,
// one read checks that the key did not go in between.
func (s *session) watchDelete(wctx context.Context, key string, created, rev int64, e *entry) error {
	wctx, cancel := context.WithCancel(wctx)
	defer cancel()
	wch := s.cli.Watch(wctx, key, clientv3.WithFilterPut(), clientv3.WithCreatedNotify())
	var tick <-chan time.Time
	if e != nil {
		t := time.NewTicker(max(s.ttl/4, 10*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case wr, ok := <-wch:
			if !ok {
				if err := wctx.Err(); err != nil {
					return err
				}
				return errors.New("watch channel closed")
			}
			if err := wr.Err(); err != nil {
				return err
			}
			if wr.Created && wr.Header.Revision >= rev {
				// The key as of the watch's start revision: from the member's local
				// state if it has that revision, else linearizably.
				reqCtx, rcancel := s.b.requestContext(wctx)
				resp, err := s.cli.Get(reqCtx, key, clientv3.WithSerializable(), clientv3.WithRev(wr.Header.Revision))
				if err != nil && wctx.Err() == nil {
					resp, err = s.cli.Get(reqCtx, key)
				}
				rcancel()
				if err != nil {
					return err
				}
				if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != created {
					return nil // gone before the watch began
				}
			}
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypeDelete {
					return nil
				}
			}
		case <-tick:
			if err := s.keepWaitingLease(wctx, e); err != nil {
				return err
			}
		}
	}
}

// keepWaitingLease renews e's lease if its last renewal is older than a third of the
// TTL. A lease found gone ends the wait (errLeaseEnded).
func (s *session) keepWaitingLease(ctx context.Context, e *entry) error {
	s.mu.Lock()
	stale := s.lease == e.lease && time.Since(s.refreshed) > s.ttl/3
	gone := s.lease != e.lease
	s.mu.Unlock()
	if gone {
		return errLeaseEnded
	}
	if !stale {
		return nil
	}
	if err := s.keepAlive(ctx, e.lease); err != nil {
		if errors.Is(err, lockclient.ErrLeaseLost) {
			return errLeaseEnded
		}
		// Transient: the key lives on until the lease's own end; the next tick retries.
	}
	return nil
}

// handedOver checks, with a read of the member's local state (serializable: no
// consensus round), whether a releaser handed the lock to e's key. A write to our key
// at some revision is a fact of history that a stale read cannot invent; a stale read
// can only miss it, and the caller then reads again linearizably. Whether the key still
// lives is the lease's matter, which TryAcquire checks (renewing it if it might not
// cover a whole TTL).
func (s *session) handedOver(ctx context.Context, e *entry) bool {
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		Then(clientv3.OpGet(e.ekey, clientv3.WithSerializable()), clientv3.OpGet(s.b.FloorKey(), clientv3.WithSerializable())).
		Commit()
	cancel()
	if err != nil {
		return false
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 || kvs[0].CreateRevision != e.rev || kvs[0].ModRevision == e.mod {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue[e.name] != e {
		return false
	}
	if e.granted == 0 {
		// The floor key was read in the same state, at a revision at least the grant's.
		e.granted, e.grantedFloor, e.floorKnown = kvs[0].ModRevision, floorKV(resp.Responses[1]), true
	}
	return true
}

var _ lockclient.QueueSession = (*session)(nil)

// AcquireQueued implements lockclient.QueueSession: it takes key, joining the key's
// queue if it is held or others wait for it, and returns once granted. sent is when the
// granting attempt began: a grant handed over by the previous holder was made earlier,
// but it is only handed out once the session lease covers a whole TTL from then (see
// claim). On any error the caller's place in the queue is given up at once (its key is
// deleted unless another caller of this session still waits through it), so that it
// never delays the waiters behind it; the Client then retries at the end of the queue.
func (s *session) AcquireQueued(ctx context.Context, key string) (lockclient.Grant, time.Time, error) {
	for attempt := 0; ; attempt++ {
		sent := time.Now()
		var (
			g   lockclient.Grant
			err error
		)
		s.mu.Lock()
		queued := s.queue[key] != nil
		s.mu.Unlock()
		if !queued && attempt == 0 {
			// One transaction takes the lock if it is free and queues us otherwise.
			var retry bool
			if g, queued, retry, err = s.grantOrEnqueue(ctx, key, sent); err == nil && !retry {
				if !queued {
					return g, sent, nil
				}
				err = lockclient.ErrHeld // queued: wait for our turn
			} else if retry {
				continue
			}
		} else {
			g, err = s.TryAcquire(ctx, key)
			if err == nil {
				return g, sent, nil
			}
		}
		if errors.Is(err, lockclient.ErrHeld) {
			if err = s.Wait(ctx, key); err == nil {
				continue
			}
		}
		s.leaveQueue(ctx, key)
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", err, cerr)
		}
		return lockclient.Grant{}, time.Time{}, err
	}
}

// grantOrEnqueue makes the first attempt of AcquireQueued in one transaction: if no key
// exists under the lock's prefix, create ours as the grant (as TryAcquire does);
// otherwise, if we have no key there yet, put ours at the end of the queue and read the
// key just ahead of it (as Wait does). queued reports the latter; retry that the caller
// should go on with TryAcquire and Wait (the lease lapsed, or a key of ours was already
// there).
func (s *session) grantOrEnqueue(ctx context.Context, key string, start time.Time) (g lockclient.Grant, queued, retry bool, err error) {
	lockPfx := s.b.lockPrefix(key)
	lease, renew, err := s.ensureLease(ctx)
	if err != nil {
		return lockclient.Grant{}, false, false, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return lockclient.Grant{}, false, false, errClosed
	}
	s.pending[key]++
	s.mu.Unlock()
	defer func() {
		s.donePending(key)
		s.kickSweeper()
	}()
	ekey := lockKey(lockPfx, lease)
	awaitKeepAlive := s.startKeepAlive(ctx, lease, renew)
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		If(clientv3.Compare(clientv3.CreateRevision(lockPfx), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(ekey, s.owner, clientv3.WithLease(lease)), s.b.floorGet()).
		Else(clientv3.OpTxn(
			[]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(ekey), "=", 0)},
			[]clientv3.Op{
				clientv3.OpPut(ekey, queuedPrefix+s.owner, clientv3.WithLease(lease)),
				clientv3.OpGet(lockPfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
					clientv3.WithLimit(2), clientv3.WithKeysOnly()),
			},
			nil)).
		Commit()
	cancel()
	keepAliveErr := awaitKeepAlive()
	if err != nil {
		if isLeaseNotFound(err) {
			s.leaseGone(lease)
			return lockclient.Grant{}, false, true, nil
		}
		// A grant or a queued key may have been created, now or later: the sweeper
		// deletes it (nothing accounts for it).
		s.mu.Lock()
		s.addOrphanLocked(ekey, key, lease)
		s.mu.Unlock()
		return lockclient.Grant{}, false, false, unavailable(ctx, "acquire", err)
	}
	rev := resp.Header.Revision
	if resp.Succeeded {
		off, ferr := s.b.grantOffset(floorKV(resp.Responses[1]))
		switch {
		case errors.Is(keepAliveErr, lockclient.ErrLeaseLost):
			return lockclient.Grant{}, false, true, nil // the key went with the lease
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
					return lockclient.Grant{}, false, false, fmt.Errorf("etcdlock: acquire: %w", err)
				}
				return lockclient.Grant{}, false, true, nil
			}
			return lockclient.Grant{}, false, false, fmt.Errorf("etcdlock: acquire: %w", cause)
		}
		s.mu.Lock()
		s.grants[key] = grantRec{lease: lease, rev: rev, start: start}
		delete(s.orphans, ekey)
		s.mu.Unlock()
		return lockclient.Grant{Key: key, Token: token(off, rev), Data: grantData{ekey: ekey, lease: lease, rev: rev}}, false, false, nil
	}
	inner := resp.Responses[0].GetResponseTxn()
	if !inner.Succeeded {
		return lockclient.Grant{}, false, true, nil // a key of ours is there already
	}
	e := &entry{name: key, ekey: ekey, lease: lease, rev: rev, mod: rev}
	switch last := inner.Responses[1].GetResponseRange().Kvs; {
	case len(last) == 2 && string(last[0].Key) == ekey:
		e.ahead, e.aheadCreate, e.aheadRev = string(last[1].Key), last[1].CreateRevision, rev
	case len(last) == 1 && string(last[0].Key) == ekey:
		e.first = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return lockclient.Grant{}, false, false, errClosed
	case s.lease != lease:
		return lockclient.Grant{}, false, true, nil // the lease ended meanwhile, and the key with it
	case s.queue[key] != nil:
		// Cannot happen (one key per session and lock); leave ours to the sweeper.
		s.addOrphanLocked(ekey, key, lease)
		return lockclient.Grant{}, false, true, nil
	}
	s.queue[key] = e
	s.registerLocked(e, ctx)
	s.markContendedLocked(key)
	return lockclient.Grant{}, true, false, nil
}
