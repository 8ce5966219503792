package etcdlock

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// This file holds the membership of a lock's waiters' queue (see "Waiting in line" in
// the package documentation): a session enqueues its key on its first Wait (wait.go
// watches the key ahead of it) and leaves the queue at once when the context of every
// caller waiting through that key has ended.

// queuedPrefix starts the value of a waiting key; a granted key's value is its owner.
const queuedPrefix = "queued "

// entry is this session's key in one lock's queue, from the Wait that enqueued it until
// a TryAcquire hands the grant out or every waiting caller's context has ended.
type entry struct {
	name  string // lock name
	ekey  string
	lease clientv3.LeaseID
	rev   int64 // create revision: the place in the queue
	mod   int64 // mod revision while waiting; a later write to the key granted the lock
	// granted is the revision at which a releaser handed the lock to this key (seen by
	// Wait); 0 while none was seen. grantedFloor is the floor key as read at granted or
	// later (nil: absent), when floorKnown.
	granted      int64
	grantedFloor *mvccpb.KeyValue
	floorKnown   bool
	// ahead is the key just ahead of ours as the enqueuing transaction saw it (at
	// revision aheadRev), so that the first wait needs no read of its own; "" once used
	// or when ours was first.
	ahead       string
	aheadCreate int64 // its create revision
	aheadRev    int64
	first       bool   // ours was first when it was enqueued
	regs        []*reg // callers waiting through this entry
}

// reg is one caller's context waiting through an entry: when it ends, so does its claim.
type reg struct {
	ctx  context.Context
	stop func() bool
}

// sameCtx compares two contexts without panicking on an uncomparable implementation.
func sameCtx(a, b context.Context) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// registerLocked makes ctx one of e's waiting callers (once per context): when ctx ends
// and no other caller still waits through e, the key leaves the queue. Caller holds mu.
func (s *session) registerLocked(e *entry, ctx context.Context) {
	for _, r := range e.regs {
		if sameCtx(r.ctx, ctx) {
			return
		}
	}
	r := &reg{ctx: ctx}
	r.stop = context.AfterFunc(ctx, func() { s.leave(e, r) })
	e.regs = append(e.regs, r)
}

// dropEntryLocked forgets e (its key is gone, granted, or being deleted) and stops its
// context watchers. Caller holds mu.
func (s *session) dropEntryLocked(name string, e *entry) {
	if s.queue[name] == e {
		delete(s.queue, name)
	}
	for _, r := range e.regs {
		r.stop()
	}
	e.regs = nil
}

// leave runs when r's context ends: if no other caller waits through e, e's key leaves
// the queue at once, so that it never blocks the waiters behind it (deleteLeft).
func (s *session) leave(e *entry, r *reg) {
	s.mu.Lock()
	for i, x := range e.regs {
		if x == r {
			e.regs = append(e.regs[:i], e.regs[i+1:]...)
			break
		}
	}
	if len(e.regs) > 0 || s.queue[e.name] != e || s.closed {
		s.mu.Unlock()
		return
	}
	s.dropEntryLocked(e.name, e)
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		if h := s.b.leaveHook; h != nil {
			h(e.ekey, false)
			defer h(e.ekey, true)
		}
		s.deleteLeft(s.bg, e)
	}()
}

// deleteLeft deletes the key of e, an entry that left the queue, if it is still the
// version e waited with (compare-and-delete on its mod revision, e.mod).
//
// Not on its create revision: the same etcd key (one per session lease and lock) may
// meanwhile have become a later attempt's, with the same create revision — a Wait of
// this session that found the key still there took it as its place in the queue
// (enqueue), and a claim or a releaser's hand-over then wrote it as that attempt's
// grant. This delete runs in the background and may land after all of that; on the
// create revision it would delete a grant its holder trusts (red-team rt51d). Every
// grant is a write after e.mod, so the mod revision tells the versions apart.
//
// A version written since (the lock handed to the key, or a claim whose answer came
// after e left) that nobody accounts for would block the lock until the session lease
// ends: it, and a delete that failed, go to the orphan sweeper, which deletes only a
// version neither a grant nor a queue entry of this session accounts for.
func (s *session) deleteLeft(ctx context.Context, e *entry) {
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		If(clientv3.Compare(clientv3.ModRevision(e.ekey), "=", e.mod)).
		Then(clientv3.OpDelete(e.ekey)).
		Else(clientv3.OpGet(e.ekey)).
		Commit()
	cancel()
	if err == nil && resp.Succeeded {
		return
	}
	if err == nil {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 || kvs[0].CreateRevision != e.rev {
			return // gone, or a newer key of ours that its own attempt accounts for
		}
	}
	s.mu.Lock()
	s.addOrphanLocked(e.ekey, e.name, e.lease)
	s.mu.Unlock()
	s.kickSweeper()
}

// enqueue puts this session's key at the end of the lock's queue and registers ctx on
// it. A nil entry without error means "try again" (the lease lapsed, or the key is
// another caller's of this session).
func (s *session) enqueue(ctx context.Context, key, lockPfx string) (*entry, error) {
	lease, _, err := s.ensureLease(ctx)
	if err != nil {
		return nil, s.waitErr(ctx, "wait: enqueue", err)
	}
	s.mu.Lock()
	if e := s.queue[key]; e != nil { // another caller just enqueued
		s.registerLocked(e, ctx)
		s.mu.Unlock()
		return e, nil
	}
	s.pending[key]++
	s.mu.Unlock()
	defer s.donePending(key)
	ekey := lockKey(lockPfx, lease)
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		If(clientv3.Compare(clientv3.CreateRevision(ekey), "=", 0)).
		Then(clientv3.OpPut(ekey, queuedPrefix+s.owner, clientv3.WithLease(lease)),
			// the last two keys by creation: ours, and the one just ahead of it
			clientv3.OpGet(lockPfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
				clientv3.WithLimit(2), clientv3.WithKeysOnly())).
		Else(clientv3.OpGet(ekey)).
		Commit()
	cancel()
	if err != nil {
		if isLeaseNotFound(err) {
			s.leaseGone(lease)
			return nil, nil
		}
		// The key may have been created: if nobody adopts it, the sweeper deletes it.
		s.mu.Lock()
		s.addOrphanLocked(ekey, key, lease)
		s.mu.Unlock()
		s.kickSweeper()
		return nil, s.waitErr(ctx, "wait: enqueue", err)
	}
	e := &entry{name: key, ekey: ekey, lease: lease}
	if resp.Succeeded {
		e.rev, e.mod = resp.Header.Revision, resp.Header.Revision
		switch last := resp.Responses[1].GetResponseRange().Kvs; {
		case len(last) == 2 && string(last[0].Key) == ekey:
			e.ahead, e.aheadCreate, e.aheadRev = string(last[1].Key), last[1].CreateRevision, resp.Header.Revision
		case len(last) == 1 && string(last[0].Key) == ekey:
			e.first = true
		}
	} else {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return nil, nil
		}
		e.rev, e.mod = kvs[0].CreateRevision, kvs[0].ModRevision
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, errClosed
	case s.lease != lease:
		return nil, nil // the lease ended meanwhile, and the key with it
	case s.queue[key] != nil:
		s.registerLocked(s.queue[key], ctx)
		return s.queue[key], nil
	}
	if !resp.Succeeded {
		// Our key exists already. If a grant of ours accounts for it, or a concurrent
		// TryAcquire may be about to hand it out, the lock is held by this session: try
		// again (the next Wait watches the grant). Otherwise nobody accounts for it (an
		// attempt whose answer was lost): it becomes our place in the queue, no later than
		// a new key's. If it is a grant nobody trusts, taking it over writes it again,
		// with a new token.
		if g, ok := s.grants[key]; (ok && g.rev == e.mod) || s.pending[key] > 1 {
			return nil, nil
		}
		delete(s.orphans, ekey)
	}
	s.queue[key] = e
	s.registerLocked(e, ctx)
	s.markContendedLocked(key)
	return e, nil
}

func (s *session) donePending(key string) {
	s.mu.Lock()
	if s.pending[key]--; s.pending[key] <= 0 {
		delete(s.pending, key)
	}
	s.mu.Unlock()
}

// leaveQueue withdraws ctx's claim on this session's place in key's queue, which leaves
// the queue if no other caller waits through it.
func (s *session) leaveQueue(ctx context.Context, key string) {
	s.mu.Lock()
	e := s.queue[key]
	var r *reg
	if e != nil {
		for _, x := range e.regs {
			if sameCtx(x.ctx, ctx) {
				r = x
				break
			}
		}
	}
	s.mu.Unlock()
	if r != nil && r.stop() { // its AfterFunc has not run: leave now instead
		s.leave(e, r)
	}
}
