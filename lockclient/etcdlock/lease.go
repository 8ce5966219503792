package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/lockclient"
)

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
	reqCtx, cancel := s.b.requestContext(ctx)
	defer cancel()
	sent := time.Now()
	resp, err := s.cli.Grant(reqCtx, s.ttlSec)
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
	reqCtx, cancel := s.b.requestContext(ctx)
	defer cancel()
	if _, err := s.cli.Revoke(reqCtx, lease); err != nil && !isLeaseNotFound(err) {
		return unavailable(ctx, "revoke session lease", err)
	}
	return nil
}

// keepAlive renews lease once. A lease etcd no longer has yields ErrLeaseLost. The
// request goes only through a member connected to the leader (WithRequireLeader): a
// member cut off from the cluster answers at once that it has no leader, instead of
// holding the renewal until the request timeout.
func (s *session) keepAlive(ctx context.Context, lease clientv3.LeaseID) error {
	reqCtx, cancel := s.b.requestContext(clientv3.WithRequireLeader(ctx))
	defer cancel()
	sent := time.Now()
	resp, err := s.cli.KeepAliveOnce(reqCtx, lease)
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
	var stale []staleGrant
	if s.lease == lease && sent.After(s.refreshed) {
		stale = s.untrustedGrantsLocked(lease, sent)
		s.refreshed, s.leaseTTL = sent, ttl
	}
	s.mu.Unlock()
	s.freeStale(stale)
	return nil
}

// staleGrant is a grant whose client has given it up while its key still lives.
type staleGrant struct {
	name, ekey string
	lease      clientv3.LeaseID
	token      int64
}

// untrustedGrantsLocked removes and returns the grants on lease that their client no
// longer trusts at sent, the send time of a renewal that just succeeded: the client
// trusts a grant until the send time of its last successful renewal (or of the grant)
// plus the TTL minus its margin, and both are recorded here no later than the client's
// own (refreshed also counts renewals the client did not send itself, which only makes
// this later). A grant neither renewed nor granted within the last TTL is lost for its
// client — its renewals failed, or it stopped renewing — yet this renewal (a grant of
// another lock, a waiting key's keep-alive) would keep its key, and the lock, alive.
// Caller holds mu.
func (s *session) untrustedGrantsLocked(lease clientv3.LeaseID, sent time.Time) []staleGrant {
	var stale []staleGrant
	for name, g := range s.grants {
		if g.lease == lease && maxTime(s.refreshed, g.start).Add(s.ttl).Before(sent) {
			delete(s.grants, name)
			stale = append(stale, staleGrant{name: name, ekey: lockKey(s.b.lockPrefix(name), lease), lease: lease, token: g.rev})
		}
	}
	return stale
}

// freeStale deletes the keys of grants their client gave up (owner-checked: only if
// the key is still that grant), in the background; a failed delete is left to the
// orphan sweeper.
func (s *session) freeStale(stale []staleGrant) {
	if len(stale) == 0 {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		ctx, cancel := s.b.requestContext(s.bg)
		defer cancel()
		for _, g := range stale {
			if s.deleteIfMod(ctx, g.ekey, g.token) != nil {
				s.mu.Lock()
				s.addOrphanLocked(g.ekey, g.name, g.lease)
				s.mu.Unlock()
				s.kickSweeper()
			}
		}
	}()
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
	for name, g := range s.grants {
		if g.lease != lease {
			continue
		}
		delete(s.grants, name)
		if now.Before(maxTime(last, g.start).Add(s.ttl)) {
			s.lostEarlier = true
		}
	}
	for ekey, o := range s.orphans {
		if o.lease == lease {
			delete(s.orphans, ekey)
		}
	}
	for name, e := range s.queue {
		if e.lease == lease {
			s.dropEntryLocked(name, e) // its key went with the lease
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
	s.kickSweeper()
	return nil
}
