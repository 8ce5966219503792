package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// The seed rule (seed.go; red-team rt49e F1): a service whose processes all run
// WithMinToken(M) loses its whole etcd cluster (quorum lost, a wiped volume, a new
// cluster from the same configuration: a fresh data dir). The rebuilt cluster's
// revision restarts at 1; before, the offset was put back at M and the same lock was
// granted M + a small revision, below the tokens granted before the loss (and LastToken
// answered as low). Now the missing offset is seeded at the clock (µs) plus M: every
// grant and LastToken after the rebuild are above every token granted before.
func TestRebuiltClusterWithMinTokenGrantsAboveIssued(t *testing.T) {
	const minToken = 1_000_000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	grant := func(addr, owner string, churn int) uint64 {
		cli := etcdtest.NewClient(t, addr)
		for i := 0; i < churn; i++ { // the cluster's ordinary life: other keys written
			if _, err := cli.Put(ctx, fmt.Sprintf("app/other/%d", i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		b := etcdlock.New(cli, etcdlock.WithPrefix("locks/"), etcdlock.WithMinToken(minToken))
		c := lockclient.New(b, lockclient.WithTTL(5*time.Second), lockclient.WithOwner(owner))
		defer func() { _ = c.Close(ctx) }()
		l, err := c.Acquire(ctx, "account-42")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Release(ctx) }()
		return l.Token()
	}

	before := grant(startDefaultConfiguredEtcd(t), "process-of-old-cluster", 500)
	// The old cluster is lost; the same configuration is deployed on a rebuilt cluster.
	addr := startDefaultConfiguredEtcd(t)
	last, err := etcdlock.New(etcdtest.NewClient(t, addr), etcdlock.WithPrefix("locks/"), etcdlock.WithMinToken(minToken)).LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < before {
		t.Fatalf("LastToken of the rebuilt cluster = %d, below token %d granted before the loss", last, before)
	}
	after := grant(addr, "process-of-new-cluster", 0)
	t.Logf("token before the rebuild %d, LastToken after %d, token after %d (WithMinToken %d)", before, last, after, minToken)
	if after <= before {
		t.Fatalf("tokens went back: the rebuilt cluster, configured WithMinToken(%d) as before, granted %d for the lock granted %d before the loss",
			minToken, after, before)
	}
}

// A service of an earlier release (its floor key holding WithMinToken's value) is seeded
// once, at the first Open of this release: its tokens jump up, never back, and a seeded
// offset is left alone by every later Backend. A WithMinToken that leaves no room for a
// seed below 2^62 fails the grant (and LastToken) on a prefix without offset with
// ErrInvalidConfig and writes nothing, rather than price it below the tokens granted
// before a loss.
func TestWithMinTokenSeedsOnce(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	ctx := ctxT(t, 30*time.Second)

	prefix := uniquePrefix(t)
	const m = uint64(1) << 40
	const base = 1_704_067_200_000_000 // 2024-01-01 in µs (seed.go's seedBase)
	floorKey := prefix + "~floor"
	if _, err := cli.Put(ctx, floorKey, strconv.FormatUint(m, 10)); err != nil { // an earlier release's offset
		t.Fatal(err)
	}
	var prev uint64
	var seededAt int64
	for i, owner := range []string{"a", "b"} {
		cl := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
			lockclient.WithTTL(testTTL), lockclient.WithOwner(owner))
		l, err := cl.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= m+base || l.Token() <= prev {
			t.Fatalf("%s: token %d under an earlier release's offset %d: want the seed (above %d) and above %d", owner, l.Token(), m, m+base, prev)
		}
		prev = l.Token()
		_ = l.Release(ctx)
		_ = cl.Close(ctx)
		resp, err := cli.Get(ctx, floorKey)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("floor key: %v %v", resp, err)
		}
		if i == 0 {
			seededAt = resp.Kvs[0].ModRevision
		} else if resp.Kvs[0].ModRevision != seededAt {
			t.Fatalf("a seeded offset was seeded again (mod revision %d, was %d)", resp.Kvs[0].ModRevision, seededAt)
		}
	}

	full := uniquePrefix(t) + "full/"
	top := etcdlock.New(cli, etcdlock.WithPrefix(full), etcdlock.WithMinToken(1<<62))
	z := lockclient.New(top, lockclient.WithTTL(testTTL), lockclient.WithOwner("z"))
	defer func() { _ = z.Close(context.Background()) }()
	if g, err := z.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("WithMinToken(2^62) on a prefix without offset: %v, %v; want ErrInvalidConfig (no seed fits)", g, err)
	}
	if _, err := top.LastToken(ctx); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("LastToken with WithMinToken(2^62) on a prefix without offset: %v; want ErrInvalidConfig", err)
	}
	if resp, err := cli.Get(ctx, top.FloorKey(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Fatalf("the refused seed wrote the floor key (%v)", err)
	}
}

// The same lockfloor -raise N (RaiseFloor, no WithMinToken) run on the rebuilt cluster
// as on the lost one: a raise that finds no floor key records the clock (µs) plus N,
// so processes without WithMinToken grant above the tokens the lost cluster granted
// under N — before, it recorded N and they granted N + a revision restarted at 1
// (red-team rt49e F1, the class of its finding).
func TestRebuiltClusterRaiseFloorRepeatedGrantsAboveIssued(t *testing.T) {
	const n = uint64(1) << 40
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	grant := func(addr, owner string, churn int) uint64 {
		cli := etcdtest.NewClient(t, addr)
		if err := etcdlock.New(cli, etcdlock.WithPrefix("locks/")).RaiseFloor(ctx, n); err != nil { // lockfloor -raise N
			t.Fatal(err)
		}
		for i := 0; i < churn; i++ {
			if _, err := cli.Put(ctx, fmt.Sprintf("app/other/%d", i), "v"); err != nil {
				t.Fatal(err)
			}
		}
		c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix("locks/")), lockclient.WithTTL(5*time.Second), lockclient.WithOwner(owner))
		defer func() { _ = c.Close(ctx) }()
		l, err := c.Acquire(ctx, "account-42")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = l.Release(ctx) }()
		return l.Token()
	}
	before := grant(startDefaultConfiguredEtcd(t), "process-of-old-cluster", 300)
	after := grant(startDefaultConfiguredEtcd(t), "process-of-new-cluster", 0)
	if after <= before {
		t.Fatalf("tokens went back: after the rebuild and the same RaiseFloor(%d), %d was granted for the lock granted %d before", n, after, before)
	}
}
