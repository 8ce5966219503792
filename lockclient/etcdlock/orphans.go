package etcdlock

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// orphan is a key of ours that may exist without a grant: the answer to its creation or
// to its deletion was lost (a timeout, a cut connection).
type orphan struct {
	key   string // lock name
	lease clientv3.LeaseID
	seq   uint64 // tells a newer record of the same key from the one a clean-up read
}

// addOrphanLocked records that ekey may exist without a grant. Caller holds mu.
func (s *session) addOrphanLocked(ekey, key string, lease clientv3.LeaseID) {
	s.orphanSeq++
	s.orphans[ekey] = orphan{key: key, lease: lease, seq: s.orphanSeq}
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
		ctx, cancel := s.b.requestContext(s.bg) // one pass is bounded: the next renewal starts another
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
	for ekey, o := range s.orphans {
		list[ekey] = o
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
		reqCtx, cancel := s.b.requestContext(ctx)
		resp, err := s.cli.Get(reqCtx, ekey)
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
