package etcdlock

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// orphan is a key of ours that may exist without a grant or a place in a queue: the
// answer to its creation or to its deletion was lost (a timeout, a cut connection, a
// cancelled context), or a waiter left the queue and its delete failed or found the key
// written since (handed the lock meanwhile; see deleteLeft).
type orphan struct {
	key   string // lock name
	lease clientv3.LeaseID
	seq   uint64    // tells a newer record of the same key from the one a sweep read
	until time.Time // a request whose answer was lost may still be applied until then
}

// lateWrites bounds how long after its caller gave up a write may still be applied by
// etcd (it waited in a member's proposal queue or behind a cut connection): an orphan
// found absent is only forgotten after that.
func (s *session) lateWrites() time.Duration {
	return max(s.b.cfg.requestTimeout, time.Second) + time.Second
}

// addOrphanLocked records that ekey may exist without a grant. Caller holds mu.
func (s *session) addOrphanLocked(ekey, key string, lease clientv3.LeaseID) {
	s.orphanSeq++
	s.orphans[ekey] = orphan{key: key, lease: lease, seq: s.orphanSeq, until: time.Now().Add(s.lateWrites())}
}

// kickSweeper makes sure the orphan sweeper runs while there are orphans: it deletes
// them promptly (at once, then with a growing pause), not only at the next session
// renewal — a session that holds nothing renews nothing, and its orphan would block the
// lock until its lease ended.
func (s *session) kickSweeper() {
	s.mu.Lock()
	if len(s.orphans) == 0 || s.sweeping || s.closed {
		s.mu.Unlock()
		return
	}
	s.sweeping = true
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		pause := 50 * time.Millisecond
		for {
			ctx, cancel := s.b.requestContext(s.bg)
			s.sweep(ctx)
			cancel()
			s.mu.Lock()
			if len(s.orphans) == 0 || s.closed {
				s.sweeping = false
				s.mu.Unlock()
				return
			}
			s.mu.Unlock()
			select {
			case <-s.bg.Done():
				s.mu.Lock()
				s.sweeping = false
				s.mu.Unlock()
				return
			case <-time.After(pause):
			}
			pause = min(2*pause, time.Second)
		}
	}()
}

// sweep makes one pass over the orphans: each one still there and accounted for by
// nothing is deleted (compare-and-delete on its mod revision).
func (s *session) sweep(ctx context.Context) {
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
			return // next pass
		}
		if len(resp.Kvs) == 0 {
			if time.Now().After(o.until) {
				forget(ekey) // no late write can create it any more
			}
			continue
		}
		kv := resp.Kvs[0]
		s.mu.Lock()
		g, held := s.grants[o.key]
		held = held && g.rev == kv.ModRevision
		e := s.queue[o.key]
		queued := e != nil && e.ekey == ekey
		busy := s.pending[o.key] > 0
		s.mu.Unlock()
		switch {
		case held, queued:
			forget(ekey) // a grant or a waiting caller accounts for it
		case busy:
			// A TryAcquire or Wait of this lock is in flight and may be about to account
			// for this key: leave it for the next pass.
		default:
			// Nothing accounts for this version of the key, and nothing can any more (a
			// grant or a queued key is only handed out while recorded): delete it if it
			// is still that version.
			if s.deleteIfMod(ctx, ekey, kv.ModRevision) != nil {
				return
			}
			if time.Now().After(o.until) {
				forget(ekey)
			}
		}
	}
}
