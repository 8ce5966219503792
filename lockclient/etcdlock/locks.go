package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

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
		g, retry, err := s.tryAcquireOnce(ctx, key, lockPfx, start)
		if !retry {
			return g, err
		}
	}
	return lockclient.Grant{}, fmt.Errorf("etcdlock: try-acquire: no definite answer after retries: %w", lockclient.ErrUnavailable)
}

// tryAcquireOnce makes one attempt of TryAcquire (start is when TryAcquire began). retry
// reports that the attempt came to no answer but another one may: the session lease
// lapsed, or an orphaned key of ours was in the way and has been deleted.
func (s *session) tryAcquireOnce(ctx context.Context, key, lockPfx string, start time.Time) (g lockclient.Grant, retry bool, err error) {
	lease, renew, err := s.ensureLease(ctx)
	if err != nil {
		return lockclient.Grant{}, false, err
	}
	var keepAliveResult chan error // the outcome of the concurrent keep-alive; nil when none runs
	if renew {
		keepAliveResult = make(chan error, 1)
		go func() { keepAliveResult <- s.keepAlive(ctx, lease) }()
	}
	awaitKeepAlive := func() error {
		if keepAliveResult == nil {
			return nil
		}
		return <-keepAliveResult
	}
	ekey := lockKey(lockPfx, lease)
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
		If(clientv3.Compare(clientv3.CreateRevision(lockPfx), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(ekey, s.owner, clientv3.WithLease(lease))).
		Else(clientv3.OpGet(lockPfx, clientv3.WithFirstCreate()...)).
		Commit()
	cancel()
	keepAliveErr := awaitKeepAlive()
	if err != nil {
		if isLeaseNotFound(err) {
			// Nothing was written; the lease lapsed.
			s.leaseGone(lease)
			return lockclient.Grant{}, true, nil
		}
		// The key may have been created: remember it so that it is cleaned up.
		s.mu.Lock()
		s.addOrphanLocked(ekey, key, lease)
		s.mu.Unlock()
		return lockclient.Grant{}, false, unavailable(ctx, "try-acquire", err)
	}
	if resp.Succeeded {
		rev := resp.Header.Revision // the transaction's revision: our key's create revision
		switch {
		case errors.Is(keepAliveErr, lockclient.ErrLeaseLost):
			return lockclient.Grant{}, true, nil // the lease expired just after the put: the key went with it
		case keepAliveErr != nil:
			if derr := s.deleteIf(ctx, ekey, rev); derr != nil {
				s.mu.Lock()
				s.addOrphanLocked(ekey, key, lease)
				s.mu.Unlock()
			}
			return lockclient.Grant{}, false, fmt.Errorf("etcdlock: try-acquire: the session lease could not be renewed: %w", keepAliveErr)
		}
		s.mu.Lock()
		s.grants[key] = grantRec{lease: lease, rev: rev, start: start}
		delete(s.orphans, ekey)
		s.mu.Unlock()
		return lockclient.Grant{Key: key, Token: uint64(rev), Data: grantData{ekey: ekey, lease: lease}}, false, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return lockclient.Grant{}, true, nil // cannot happen: the compare and the read see the same revision
	}
	if holder := kvs[0]; string(holder.Key) == ekey {
		s.mu.Lock()
		g, held := s.grants[key]
		held = held && g.rev == holder.CreateRevision
		concurrent := s.pending[key] > 1
		s.mu.Unlock()
		if !held && !concurrent {
			// Our own key, but no grant accounts for it: an earlier attempt was applied
			// after its caller gave up. Nobody trusts it; delete it and try again.
			if err := s.deleteIf(ctx, ekey, holder.CreateRevision); err != nil {
				return lockclient.Grant{}, false, err
			}
			return lockclient.Grant{}, true, nil
		}
	}
	return lockclient.Grant{}, false, lockclient.ErrHeld
}

// deleteIf deletes ekey if its create revision is still rev.
func (s *session) deleteIf(ctx context.Context, ekey string, rev int64) error {
	reqCtx, cancel := s.b.requestContext(ctx)
	defer cancel()
	_, err := s.cli.Txn(reqCtx).
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
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Get(reqCtx, lockPfx, clientv3.WithFirstCreate()...)
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
	reqCtx, cancel := s.b.requestContext(ctx)
	resp, err := s.cli.Txn(reqCtx).
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
