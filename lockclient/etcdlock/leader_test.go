package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// trusted reports whether a lease is still trusted by its client: Lost not closed and its
// local deadline not passed. (On a machine starved of CPU, the watchdog that closes Lost
// at the deadline may run late; the deadline itself is what the client promises.)
func trusted(l *lockclient.Lease) bool {
	select {
	case <-l.Lost():
		return false
	default:
		return time.Now().Before(l.Deadline())
	}
}

// exclusionLog checks mutual exclusion from two sides: the clients' (at every grant, every
// other lease of the lock must already be lost or released) and etcd's (a watch on the
// lock's prefix never sees two keys at once). Tokens must increase grant after grant.
type exclusionLog struct {
	t          *testing.T
	mu         sync.Mutex
	current    map[*lockclient.Lease]string
	lastToken  uint64
	grants     int
	violations int
}

func newExclusionLog(t *testing.T) *exclusionLog {
	return &exclusionLog{t: t, current: map[*lockclient.Lease]string{}}
}

func (x *exclusionLog) granted(who string, l *lockclient.Lease) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.grants++
	for o, name := range x.current {
		if trusted(o) {
			x.violations++
			x.t.Errorf("%s granted token %d while %s still trusts token %d", who, l.Token(), name, o.Token())
		}
	}
	if l.Token() <= x.lastToken {
		x.violations++
		x.t.Errorf("%s granted token %d after token %d", who, l.Token(), x.lastToken)
	}
	x.lastToken = l.Token()
	x.current[l] = who
}

func (x *exclusionLog) done(l *lockclient.Lease) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.current, l)
}

// watchKeys fails the test if etcd ever holds two granted keys under prefix at once
// (waiting keys, whose value starts with "queued ", are the lock's queue).
func watchKeys(t *testing.T, ctx context.Context, cli *clientv3.Client, prefix string) (stop func()) {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		live := map[string]bool{}
		rev := int64(0)
		for ctx.Err() == nil {
			opts := []clientv3.OpOption{lockKeys(prefix)}
			if rev > 0 {
				opts = append(opts, clientv3.WithRev(rev+1))
			}
			for wr := range cli.Watch(ctx, prefix, opts...) {
				for _, ev := range wr.Events {
					rev = ev.Kv.ModRevision
					if ev.Type == clientv3.EventTypeDelete || strings.HasPrefix(string(ev.Kv.Value), "queued ") {
						delete(live, string(ev.Kv.Key))
						continue
					}
					live[string(ev.Kv.Key)] = true
					if len(live) > 1 {
						t.Errorf("etcd holds %d granted keys for one lock at revision %d: %v", len(live), rev, live)
					}
				}
			}
			// The watch ended (its member lost the leader, or ctx): resume after rev.
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// checkRelease accepts the outcomes of a Release during and after a failover: done, the
// lease was already lost (ErrLeaseLost, ErrNotOwner), or no answer in time on an
// overloaded machine (ErrUnavailable: the lock then expires with its lease). Anything
// else fails the test.
func checkRelease(t *testing.T, who string, err error) {
	t.Helper()
	switch {
	case err == nil, errors.Is(err, lockclient.ErrLeaseLost), errors.Is(err, lockclient.ErrNotOwner):
	case errors.Is(err, lockclient.ErrUnavailable):
		t.Logf("%s Release: %v", who, err)
	default:
		t.Errorf("%s Release: %v", who, err)
	}
}

func leaderClient(t *testing.T, endpoints []string, prefix, owner string, ttl time.Duration) *lockclient.Client {
	cli := etcdtest.NewClient(t, endpoints...)
	c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithRequestTimeout(requestTimeout)),
		lockclient.WithOwner(owner), lockclient.WithTTL(ttl), lockclient.WithRetry(10*time.Millisecond, 100*time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c
}

// The leader of a three-node cluster is killed while a lock is held and another client
// waits for it. Whatever happens to the holder's lease during the failover (renewed
// through another member, or lost), the waiter is granted the lock only once the holder
// no longer trusts it, with a greater token, and grants work after the failover.
func TestLeaderKilledWhileHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// holderOnLeader: the holder dials only the member that is killed, so it is cut off
		// and its lease must expire; otherwise it dials every member and keeps renewing.
		holderOnLeader bool
	}{
		{"HolderReachesAllMembers", false},
		{"HolderCutOffWithLeader", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cluster := etcdtest.StartThree(t)
			ctx := ctxT(t, 30*time.Second)
			prefix := uniquePrefix(t)
			ttl := testTTL
			lead, err := cluster.WaitLeader(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var followers []string
			for i, m := range cluster.Members {
				if i != lead {
					followers = append(followers, m.ClientAddr)
				}
			}
			holderEPs := cluster.Endpoints()
			if tc.holderOnLeader {
				holderEPs = []string{cluster.Members[lead].ClientAddr}
			}
			holder := leaderClient(t, holderEPs, prefix, "holder", ttl)
			waiter := leaderClient(t, followers, prefix, "waiter", ttl)
			stop := watchKeys(t, ctx, etcdtest.NewClient(t, followers...), prefix)
			defer stop()
			x := newExclusionLog(t)

			lh, err := holder.Acquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			x.granted("holder", lh)
			lostAt := make(chan time.Time, 1)
			go func() {
				<-lh.Lost()
				lostAt <- time.Now()
			}()
			type result struct {
				l   *lockclient.Lease
				at  time.Time
				err error
			}
			got := make(chan result, 1)
			go func() {
				l, err := waiter.Acquire(ctx, "k")
				if err == nil {
					x.granted("waiter", l)
				}
				got <- result{l, time.Now(), err}
			}()
			time.Sleep(200 * time.Millisecond)
			killed := time.Now()
			cluster.Kill(lead)

			// The holder keeps the lock for 2s after the kill, unless it loses it.
			released := false
			var releasedAt time.Time
			select {
			case <-lh.Lost():
			case <-time.After(2 * time.Second):
				x.done(lh)
				releasedAt = time.Now()
				err := lh.Release(ctx)
				released = err == nil
				checkRelease(t, "holder", err)
			}
			var r result
			select {
			case r = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("waiter not granted 10s after the holder's lease ended")
			}
			if r.err != nil {
				t.Fatalf("waiter Acquire: %v", r.err)
			}
			// The holder stopped trusting its lease at the earliest of: its local deadline,
			// Lost observed closed, the Release call.
			ended := <-lostAt
			for _, at := range []time.Time{lh.Deadline(), releasedAt} {
				if !at.IsZero() && at.Before(ended) {
					ended = at
				}
			}
			t.Logf("leader killed at 0; holder lease ended at %v (released: %v, err: %v); waiter granted at %v",
				ended.Sub(killed), released, lh.Err(), r.at.Sub(killed))
			if tc.holderOnLeader && released {
				t.Errorf("the holder cut off with the leader could still release: its lease should have been lost")
			}
			if !ended.Before(r.at) {
				t.Fatalf("waiter granted at %v, before the holder's lease ended at %v", r.at.Sub(killed), ended.Sub(killed))
			}
			if r.l.Token() <= lh.Token() {
				t.Fatalf("waiter token %d <= holder token %d", r.l.Token(), lh.Token())
			}
			x.done(r.l)
			checkRelease(t, "waiter", r.l.Release(ctx))
			// After the failover, new grants work, for a new client too, with greater tokens.
			fresh := leaderClient(t, cluster.Endpoints(), prefix, "fresh", ttl)
			for i := range 3 {
				l, err := fresh.Acquire(ctx, fmt.Sprintf("after-%d", i))
				if err != nil {
					t.Fatalf("Acquire after failover: %v", err)
				}
				if l.Token() <= r.l.Token() {
					t.Fatalf("token after failover %d <= %d", l.Token(), r.l.Token())
				}
				checkRelease(t, "fresh", l.Release(ctx))
			}
			if x.violations > 0 {
				t.Fatalf("%d exclusion violations", x.violations)
			}
		})
	}
}

// Several clients contend for one lock while the leader is killed: never two trusted
// holders, never two keys at etcd, tokens always increasing, and grants resume after the
// failover.
func TestLeaderFailoverMutualExclusion(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartThree(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	ttl := testTTL
	stop := watchKeys(t, ctx, cluster.Client(t), prefix)
	defer stop()
	x := newExclusionLog(t)
	endpoints := cluster.Endpoints()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	var killedAt time.Time
	var killMu sync.Mutex
	grantsAfterKill := 0
	var wg sync.WaitGroup
	for w := range 3 {
		c := leaderClient(t, endpoints, prefix, fmt.Sprintf("w%d", w), ttl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				actx, cancel := context.WithTimeout(runCtx, 5*time.Second)
				l, err := c.Acquire(actx, "mx")
				cancel()
				if err != nil {
					if runCtx.Err() == nil && !errors.Is(err, lockclient.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				x.granted(c.Owner(), l)
				killMu.Lock()
				if !killedAt.IsZero() {
					grantsAfterKill++
				}
				killMu.Unlock()
				select {
				case <-time.After(20 * time.Millisecond):
				case <-l.Lost():
				}
				x.done(l)
				checkRelease(t, c.Owner(), l.Release(context.WithoutCancel(ctx)))
			}
		}()
	}
	time.Sleep(700 * time.Millisecond)
	killMu.Lock()
	killedAt = time.Now()
	killMu.Unlock()
	cluster.KillLeader()
	// Run until a few grants went through after the failover (a holder cut off during
	// the election keeps the lock until etcd expires its lease), or give up.
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		killMu.Lock()
		n := grantsAfterKill
		killMu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancelRun()
	wg.Wait()
	t.Logf("%d grants in all, %d after the leader was killed", x.grants, grantsAfterKill)
	if grantsAfterKill == 0 {
		t.Fatal("no grant after the leader was killed")
	}
	if x.violations > 0 {
		t.Fatalf("%d exclusion violations", x.violations)
	}
}

// Renewals and waits go only through a member connected to the leader: when the member
// a client talks to is cut off from the rest of the cluster (the two others die, so it
// has no leader), the holder's renewals through it fail and its lease is lost by its
// local deadline, and a Wait through it ends with ErrUnavailable instead of staying
// silently open until its context ends.
func TestIsolatedMemberNeitherRenewsNorWaits(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartThree(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	ttl := testTTL
	lead, err := cluster.WaitLeader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m := (lead + 1) % len(cluster.Members) // a follower
	addr := cluster.Members[m].ClientAddr
	holder := leaderClient(t, []string{addr}, prefix, "holder", ttl)
	lh, err := holder.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	s, err := etcdlock.New(etcdtest.NewClient(t, addr), etcdlock.WithPrefix(prefix), etcdlock.WithRequestTimeout(requestTimeout)).Open(ctx, "waiter", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctxT(t, time.Second)) // best effort: nobody can revoke without a leader
	if _, err := s.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire = %v, want ErrHeld", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- s.Wait(ctx, "k") }()
	time.Sleep(200 * time.Millisecond) // the waiter is queued and watching
	for i := range cluster.Members {
		if i != m {
			cluster.Kill(i)
		}
	}
	cut := time.Now()
	select {
	case err := <-waited:
		if !errors.Is(err, lockclient.ErrUnavailable) {
			t.Fatalf("Wait through the isolated member = %v, want ErrUnavailable", err)
		}
		t.Logf("Wait ended %v after the member was isolated: %v", time.Since(cut), err)
	case <-time.After(10 * time.Second):
		t.Fatal("Wait through the isolated member still open 10s after it lost the leader")
	}
	select {
	case <-lh.Lost():
		t.Logf("holder's lease lost %v after the member was isolated: %v", time.Since(cut), lh.Err())
	case <-time.After(ttl + time.Second):
		t.Fatal("the holder still trusts its lease a TTL after its member lost the leader")
	}
}
