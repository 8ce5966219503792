package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// A prefix that lost its data (the floor key with it) never grants a token again
// (red-team rt45d F1, F2).

// F1: WithMinToken(m) sets the offset to m (not m minus the revision), so after the
// prefix is deleted the next process's first Open puts it back at m and grants above
// every token granted before (offset m plus a later revision) — before, it re-raised
// to m − revision and granted m+1, m+2, … again, above the database floor. A Backend
// opened before the loss refuses grants (ErrUnavailable) rather than price them at
// offset 0.
func TestPrefixLostWithMinTokenGrantsAboveIssued(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := uniquePrefix(t)
	const m = uint64(1) << 54
	a := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("a"))
	defer func() { _ = a.Close(context.Background()) }()
	var stale *lockclient.Lease
	for _, k := range []string{"x1", "x2", "x3", "x4", "account:7"} {
		l, err := a.Acquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		stale = l
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
	if _, err := a.Acquire(short, "y"); !errors.Is(err, lockclient.ErrUnavailable) {
		t.Errorf("a Backend opened before the loss: grant with the floor key missing = %v, want ErrUnavailable", err)
	}
	cancelShort()
	b := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("b"))
	defer func() { _ = b.Close(context.Background()) }()
	fresh, err := b.Acquire(ctx, "account:7")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fresh.Release(context.Background()) }()
	if fresh.Token() <= stale.Token() {
		t.Fatalf("after the prefix loss the service granted %d for account:7, not above %d granted before it", fresh.Token(), stale.Token())
	}
	// The running Backend grants again once the offset is back, above too.
	l, err := a.Acquire(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()
	if l.Token() <= fresh.Token() {
		t.Fatalf("token %d after %d", l.Token(), fresh.Token())
	}
}

// F2: Retire through a Backend without WithMinToken (lockfloor -retire) on a prefix
// that lost its data (neither the floor key nor the service identity) cannot bound the
// tokens it issued: it fails with ErrUnavailable and marks nothing — before, it marked
// retired:2^52 and answered 2^52 plus the revision, below the tokens the service (raised
// to 2^53 at its switch) granted. Through a Backend with WithMinToken it answers above.
func TestRetireAfterPrefixLossRefused(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := uniquePrefix(t)
	svc := etcdlock.New(cli, etcdlock.WithPrefix(prefix))
	if err := svc.RaiseFloor(ctx, 2*lockclient.RetirementMargin); err != nil { // the switch's lockfloor -raise
		t.Fatal(err)
	}
	a := lockclient.New(svc, lockclient.WithTTL(10*time.Second), lockclient.WithOwner("a"))
	defer func() { _ = a.Close(context.Background()) }()
	l, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	tool := etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix))
	last, err := tool.Retire(ctx)
	if !errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Retire after the prefix loss = %d, %v; want ErrUnavailable (counter lost)", last, err)
	}
	if resp, err := cli.Get(ctx, tool.FloorKey()); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("the refused Retire wrote the floor key (%v)", err)
	}
	configured := etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix),
		etcdlock.WithMinToken(2*lockclient.RetirementMargin))
	last, err = configured.Retire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < l.Token() {
		t.Fatalf("Retire with WithMinToken after the prefix loss answered %d, below token %d the service granted", last, l.Token())
	}
}
