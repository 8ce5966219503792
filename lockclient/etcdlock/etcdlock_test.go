package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
)

// The lock contract against a real etcd, every client through its own cuttable proxy.
// etcd leases are whole seconds, so the suite runs with a whole-second TTL (see testTTL).
func TestConformance(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	target := cluster.Members[0].ClientAddr
	locktest.Run(t, locktest.Harness{
		New:  func(t *testing.T) locktest.Namespace { return newProxiedNS(t, target) },
		TTL:  testTTL,
		FIFO: true, // the waiters' queue, see the package doc
	})
}

// The session-level suite. etcd expires the session lease on the leader's clock; the
// lease is granted without slack, so that a 1s session TTL is a 1s lease, and etcd
// deletes an expired lease's keys within its lease-revocation loop (every 500ms).
func TestSessionConformance(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	target := cluster.Members[0].ClientAddr
	locktest.RunSession(t, locktest.SessionHarness{
		New: func(t *testing.T) locktest.Namespace {
			ns := newProxiedNS(t, target)
			ns.opts = []etcdlock.Option{etcdlock.WithLeaseSlack(0)}
			return ns
		},
		TTL:           time.Second,
		ExpiryDelay:   time.Second,
		SecondRelease: lockclient.ErrLeaseLost, // the key is gone
		// ForeignGrant: none; a grant carries its session lease, and whoever presents it
		// renews that lease.
		ServerClock: func(t *testing.T, ns locktest.Namespace) locktest.ServerClock {
			return leaseClock{admin: cluster.Client(t), prefix: ns.(*proxiedNS).prefix}
		},
	})
}

// leaseClock reads and ends the session lease of a lock at etcd.
type leaseClock struct {
	admin  *clientv3.Client // bypasses the proxies
	prefix string
}

func (c leaseClock) lease(t *testing.T, key string) clientv3.LeaseID {
	resp, err := c.admin.Get(ctxT(t, 10*time.Second), c.prefix+url.PathEscape(key)+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%d keys for lock %s, want 1", len(resp.Kvs), key)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

func (c leaseClock) CheckExpiry(t *testing.T, key string, l *lockclient.Lease, ttl time.Duration) {
	resp, err := c.admin.TimeToLive(ctxT(t, 10*time.Second), c.lease(t, key))
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(resp.TTL) * time.Second; left <= ttl-5*time.Second || left > ttl {
		t.Fatalf("etcd lease has %v left, want about %v", left, ttl)
	}
}

// Expire ends the session lease at etcd, as its expiry would: its keys are deleted.
func (c leaseClock) Expire(t *testing.T, key string) {
	if _, err := c.admin.Revoke(ctxT(t, 10*time.Second), c.lease(t, key)); err != nil {
		t.Fatal(err)
	}
}

// The token is our key's create revision, the key is laid out as documented, and the
// lease etcd holds has the TTL rounded up to whole seconds.
func TestKeysTokensAndLeaseTTL(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	prefix := uniquePrefix(t)
	c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix)), lockclient.WithTTL(1500*time.Millisecond))
	defer c.Close(ctx)

	key := "account/42 é%"
	l, err := c.Acquire(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, prefix, lockKeys(prefix))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("%d keys under the prefix, want 1", len(resp.Kvs))
	}
	kv := resp.Kvs[0]
	want := fmt.Sprintf("%s%s/%x", prefix, url.PathEscape(key), kv.Lease)
	if string(kv.Key) != want {
		t.Fatalf("lock key %q, want %q", kv.Key, want)
	}
	if uint64(kv.CreateRevision) != l.Token() {
		t.Fatalf("token %d, want the key's create revision %d", l.Token(), kv.CreateRevision)
	}
	if string(kv.Value) != c.Owner() {
		t.Fatalf("value %q, want the owner %q", kv.Value, c.Owner())
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		t.Fatal(err)
	}
	if ttl.GrantedTTL != 3 {
		t.Fatalf("etcd lease TTL %ds for a 1.5s client TTL, want 3s (1.5s + the default 1s slack, rounded up)", ttl.GrantedTTL)
	}
	// Tokens are etcd revisions: any write in between raises the next token.
	if _, err := cli.Put(ctx, prefix+"other", "x"); err != nil {
		t.Fatal(err)
	}
	l2, err := c.Acquire(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= l.Token()+1 {
		t.Fatalf("second token %d, want > %d (a put happened in between)", l2.Token(), l.Token()+1)
	}
	// Both locks share the session's one lease.
	resp, err = cli.Get(ctx, prefix, lockKeys(prefix))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv2 := range resp.Kvs {
		if string(kv2.Key) != prefix+"other" && kv2.Lease != kv.Lease {
			t.Fatalf("key %q on lease %x, want the session lease %x", kv2.Key, kv2.Lease, kv.Lease)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Close revokes the session lease.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ttl, err = cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TTL != -1 {
		t.Fatalf("session lease still alive after Close: TTL %d", ttl.TTL)
	}
}

// A session whose lease lapsed while it held nothing grants a new one and takes locks
// again; a lock taken on a lease keeps a full TTL even when the lease was about to expire.
func TestSessionLeaseLapsesWhileIdle(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	prefix := uniquePrefix(t)
	ttl := testTTL
	c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix)), lockclient.WithTTL(ttl))
	defer c.Close(ctx)
	l, err := c.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 700*time.Millisecond) // no renewals while nothing is held: the lease lapses
	l, err = c.Acquire(ctx, "a")
	if err != nil {
		t.Fatalf("Acquire after the session lease lapsed: %v", err)
	}
	// Held past its TTL by session renewals.
	time.Sleep(ttl + ttl/2)
	if l.Err() != nil {
		t.Fatalf("lease lost: %v", l.Err())
	}
	other := lockclient.New(etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(prefix)), lockclient.WithTTL(ttl))
	defer other.Close(ctx)
	if _, err := other.TryAcquire(ctx, "a"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrHeld", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A grant arriving at a lease that has little time left must still live a whole TTL
// from the request (the Session contract the client's deadline relies on): the session
// renews the lease before it takes the lock. Checked at etcd, without renewals.
func TestGrantOnAgingLeaseGetsFullTTL(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	prefix := uniquePrefix(t)
	ttl := time.Second
	s, err := etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithLeaseSlack(0)).Open(ctx, "aging", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	time.Sleep(700 * time.Millisecond) // the session lease has about 300ms left
	start := time.Now()
	g, err := s.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// No renewals from here: etcd deletes the key when the lease expires.
	wch := cli.Watch(ctx, prefix, lockKeys(prefix), clientv3.WithRev(int64(g.Token)+1), clientv3.WithFilterPut())
	for wr := range wch {
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		if len(wr.Events) > 0 {
			break
		}
	}
	if held := time.Since(start); held < ttl {
		t.Fatalf("the grant lived %v at etcd, less than the TTL %v", held, ttl)
	} else {
		t.Logf("grant on an aging lease lived %v at etcd (TTL %v)", held, ttl)
	}
}

// The backend refuses a non-positive TTL and reports an unreachable etcd as unavailable.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	b := etcdlock.New(cluster.Client(t))
	ctx := ctxT(t, 10*time.Second)
	if _, err := b.Open(ctx, "x", 0); err == nil {
		t.Fatal("Open with ttl 0 succeeded")
	}
	// A client whose endpoint is a proxy that is blocked from the start.
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	cli := ns.client("cut")
	ns.Partition("cut")
	defer ns.Heal("cut")
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := ns.backend(cli).Open(short, "cut", time.Second)
	if !errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("Open through a cut = %v, want ErrUnavailable", err)
	}
}

// A grant whose concurrent lease renewal failed cannot be trusted for a whole TTL: the
// session deletes the key it just wrote and reports ErrUnavailable.
func TestTryAcquireWithFailedRenewalLeavesNoKey(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ka := countKeepAlives(cli)
	observer := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	prefix := uniquePrefix(t)
	// A 1s TTL on a 1s lease (no slack): every TryAcquire renews the lease.
	s, err := etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithLeaseSlack(0)).Open(ctx, "x", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	injected := status.Error(codes.Unavailable, "injected")
	ka.fail.Store(&injected)
	_, err = s.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire with a failed renewal = %v, want ErrUnavailable", err)
	}
	resp, err := observer.Get(ctx, prefix, lockKeys(prefix), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Fatalf("%d keys left after a grant that could not be trusted", resp.Count)
	}
	ka.fail.Store(nil)
	g, err := s.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire after the renewals recovered: %v", err)
	}
	if err := s.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
}

// A session lease that etcd drops while the client holds a lock on it (revoked by an
// operator here) is reported lost — whether the watchdog's renewal or a new TryAcquire
// finds out first — and the client takes locks again on a new lease.
func TestRevokedSessionLeaseIsReportedLost(t *testing.T) {
	t.Parallel()
	for _, tryFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("TryAcquireFirst=%v", tryFirst), func(t *testing.T) {
			cluster := etcdtest.StartSingle(t)
			cli := cluster.Client(t)
			observer := cluster.Client(t)
			ctx := ctxT(t, 20*time.Second)
			prefix := uniquePrefix(t)
			ttl := testTTL
			c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix)), lockclient.WithTTL(ttl))
			defer c.Close(ctx)
			la, err := c.Acquire(ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			resp, err := observer.Get(ctx, prefix, lockKeys(prefix))
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("Get = %v, %v", resp, err)
			}
			revoked := time.Now()
			if _, err := observer.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
				t.Fatal(err)
			}
			var lb *lockclient.Lease
			if tryFirst {
				// The session finds the lease gone, moves to a new one, and makes the next
				// renewal report the loss of "a".
				if lb, err = c.TryAcquire(ctx, "b"); err != nil {
					t.Fatalf("TryAcquire after the revocation: %v", err)
				}
			}
			select {
			case <-la.Lost():
				t.Logf("lost %v after the revocation: %v", time.Since(revoked), la.Err())
			case <-time.After(ttl):
				t.Fatal("lease on a revoked session lease not reported lost")
			}
			if !errors.Is(la.Err(), lockclient.ErrLeaseLost) {
				t.Fatalf("Err = %v, want ErrLeaseLost", la.Err())
			}
			if lb != nil {
				// Dropped with the rest (conservative): the session cannot say which of the
				// client's leases the report concerns.
				lb.Release(ctx)
			}
			l, err := c.Acquire(ctx, "a")
			if err != nil {
				t.Fatalf("Acquire on a new session lease: %v", err)
			}
			time.Sleep(ttl) // renewed on the new lease
			if l.Err() != nil {
				t.Fatalf("lease on the new session lease lost: %v", l.Err())
			}
			l.Release(ctx)
		})
	}
}
