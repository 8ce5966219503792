package etcdlock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The token floor contract (lockclient.FloorRaiser) against a real etcd.
func TestFloor(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	target := cluster.Members[0].ClientAddr
	locktest.RunFloor(t, locktest.Harness{
		New: func(t *testing.T) locktest.Namespace { return newProxiedNS(t, target) },
		TTL: testTTL,
	})
}

// A grant handed over by the releaser at revision R is priced with the offset in force at
// R, even when the floor is raised before the waiter learns of it: its token stays at
// most the LastToken read before the raise (grant order), and a grant made after the
// raise is above the raise's min.
func TestFloorHandOverPricedAtGrantRevision(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	admin := etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(ns.prefix))
	observer := cluster.Client(t)
	ctx := ctxT(t, 30*time.Second)
	a, b, c := ns.newClient("a", testTTL), ns.newClient("b", testTTL), ns.newClient("c", testTTL)
	if err := admin.RaiseFloor(ctx, 1_000_000); err != nil { // an offset already in force
		t.Fatal(err)
	}
	keys := func() []*mvccpb.KeyValue {
		resp, err := observer.Get(ctx, ns.prefix+"k/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Kvs
	}
	waitKeys := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); len(keys()) != n; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("lock k has %d keys, want %d", len(keys()), n)
			}
		}
	}
	acquire := func(c *lockclient.Client) <-chan *lockclient.Lease {
		got := make(chan *lockclient.Lease, 1)
		go func() {
			l, err := c.Acquire(ctx, "k")
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		return got
	}
	// a waits for b, so that a's session has seen k contended and hands it over.
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	gotA := acquire(a)
	waitKeys(2)
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	la := <-gotA
	if la == nil {
		t.FailNow()
	}
	gotB := acquire(b)
	waitKeys(2)
	ns.Pause("b") // b learns of the hand-over only after the raise
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	kvs := keys()
	if len(kvs) != 1 || strings.HasPrefix(string(kvs[0].Value), "queued ") {
		t.Fatalf("after a's release k has %v: want b's key, handed over", kvs)
	}
	handedAt := kvs[0].ModRevision
	before, err := admin.LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	min := before + 1_000_000
	if err := admin.RaiseFloor(ctx, min); err != nil {
		t.Fatal(err)
	}
	ns.Resume("b")
	lb2 := <-gotB
	if lb2 == nil {
		t.FailNow()
	}
	defer lb2.Release(ctx)
	lc, err := c.Acquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Release(ctx)
	t.Logf("a %d, b handed over at revision %d: token %d; LastToken before the raise %d; raised to %d; c %d",
		la.Token(), handedAt, lb2.Token(), before, min, lc.Token())
	if lb2.Token() <= la.Token() || lb2.Token() > before {
		t.Fatalf("b's token %d, handed over before the raise: want above a's %d and at most LastToken %d read before the raise (%d)",
			lb2.Token(), la.Token(), before, min)
	}
	if lc.Token() <= min {
		t.Fatalf("c's token %d after RaiseFloor(%d)", lc.Token(), min)
	}
}

// WithMinToken raises the floor at the first Open; the floor key holds the offset, a
// lower raise writes nothing, and invalid values are configuration errors.
func TestFloorKeyAndWithMinToken(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	b := etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(5_000_000))
	if b.FloorKey() != prefix+"~floor" {
		t.Fatalf("FloorKey %q", b.FloorKey())
	}
	c := lockclient.New(b, lockclient.WithTTL(testTTL))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() <= 5_000_000 {
		t.Fatalf("first token %d, want above WithMinToken's 5000000", l.Token())
	}
	floor, err := cli.Get(ctx, b.FloorKey())
	if err != nil || len(floor.Kvs) != 1 {
		t.Fatalf("floor key: %v %v", floor, err)
	}
	if err := b.RaiseFloor(ctx, 4_000_000); err != nil {
		t.Fatal(err)
	}
	again, err := cli.Get(ctx, b.FloorKey())
	if err != nil || len(again.Kvs) != 1 || again.Kvs[0].ModRevision != floor.Kvs[0].ModRevision {
		t.Fatalf("a lower RaiseFloor wrote the floor key: %v %v (was %v)", again, err, floor.Kvs)
	}
	if err := b.RaiseFloor(ctx, math.MaxUint64); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("RaiseFloor(2^64-1) = %v, want ErrInvalidConfig", err)
	}
	if err := etcdlock.New(cli, etcdlock.WithMinToken(math.MaxUint64)).CheckConfig(); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("CheckConfig with WithMinToken(2^64-1) = %v, want ErrInvalidConfig", err)
	}
}

// TestFloorKeyDeletedTokenGoesBackRefused (red-team rt28b F2): the floor key <prefix>~floor is
// deleted by hand (an operator's clean-up of "stray" keys, an etcdctl del --prefix of
// the wrong range, a restore of the keyspace without it). The offset falls back to 0 and
// the same Client that was just granted offset+revision (above 10^9) is granted a bare
// revision (a few dozen) for the same lock, without any error. The package doc forbids
// the deletion, but nothing notices it, although the Client (or the etcdlock session)
// holds the proof: its own earlier, higher token.
//
// Right behaviour (G14; Lease.Token: "strictly greater than the token of every earlier
// grant of the same lock service"): a grant whose token is not above the highest token
// this Client (or Backend) has been granted is refused with a typed error (e.g. wrapping
// ErrInvalidConfig, naming the floor key and the fix: RaiseFloor), not handed out.
func TestFloorKeyDeletedTokenGoesBackRefused(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	admin := etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(ns.prefix))
	raw := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	if err := admin.RaiseFloor(ctx, 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	c := ns.newClient("a", testTTL)
	l1, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	first := l1.Token()
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Delete(ctx, admin.FloorKey()); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	l2, err := c.Acquire(actx, "k")
	if err != nil {
		if errors.Is(err, lockclient.ErrInvalidConfig) {
			return
		}
		t.Fatalf("Acquire after the floor key was deleted: %v; want a typed error or a token above %d", err, first)
	}
	defer l2.Release(ctx)
	if l2.Token() <= first {
		t.Fatalf("the same Client was granted token %d for %q after its own earlier grant of token %d: the floor key was deleted "+
			"and the token went back unnoticed", l2.Token(), "k", first)
	}
}

// TestCorruptFloorKeyIsConfigError (red-team rt28b F7): a floor key that holds no offset (a value
// written by hand: "1e9", "-5", an offset above 2^62, text) makes every grant fail with
// an error wrapping ErrUnavailable, so Acquire retries with backoff until the caller's
// deadline, logging "lock service unreachable": the service is reachable, its
// configuration is broken, and no retry can fix it.
//
// Right behaviour: like redislock's exhausted counter and sqllock's missing counter row,
// a token source that cannot give a token is a configuration error: an error wrapping
// lockclient.ErrInvalidConfig naming the floor key, returned by Acquire at once.
func TestCorruptFloorKeyIsConfigError(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	admin := etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(ns.prefix))
	raw := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	if _, err := raw.Put(ctx, admin.FloorKey(), "1e9"); err != nil {
		t.Fatal(err)
	}
	c := ns.newClient("a", testTTL)
	actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	l, err := c.Acquire(actx, "k")
	if err == nil {
		l.Release(ctx)
		t.Fatalf("granted token %d under a floor key holding %q", l.Token(), "1e9")
	}
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Acquire with a corrupt floor key = %v after %v; want ErrInvalidConfig at once, not ErrUnavailable retried until the deadline",
			err, time.Since(start).Round(time.Millisecond))
	}
}
