package etcdlock_test

import (
	"context"
	"errors"
	"strconv"
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
// opened before the loss put it back at its next grant (red-team rt46d F1; rt45d had it
// refuse grants with ErrUnavailable until a restart), above too.
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
	y, err := a.Acquire(ctx, "y")
	if err != nil {
		t.Fatalf("a Backend opened before the loss: grant with the floor key missing: %v", err)
	}
	defer func() { _ = y.Release(context.Background()) }()
	if y.Token() <= stale.Token() {
		t.Fatalf("a Backend opened before the loss granted %d, not above %d granted before it", y.Token(), stale.Token())
	}
	b := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("b"))
	defer func() { _ = b.Close(context.Background()) }()
	fresh, err := b.Acquire(ctx, "account:7")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fresh.Release(context.Background()) }()
	if fresh.Token() <= y.Token() {
		t.Fatalf("after the prefix loss the service granted %d for account:7, not above %d granted before it", fresh.Token(), y.Token())
	}
}

// A prefix that lost its data whose floor key is then written again below a running
// Backend's WithMinToken(m) — by lockfloor -raise m (RaiseFloor, which wrote m minus the
// revision), by a process configured with a lower WithMinToken, by hand — must not price
// that Backend's grants: it put the offset back at m and granted above every token
// granted before the loss, through each way a grant is made (Acquire's first
// transaction, TryAcquire). Its LastToken bounds what it granted before, and Retire
// through it too. Before, only a missing floor key was refused, and the Backend granted
// a stale holder's lock below the stale holder's token, so the stale holder's writes
// passed the database floor and fenced the new holder out (red-team rt46d F1).
func TestPrefixLostOffsetWrittenLowerRestoredByMinToken(t *testing.T) {
	t.Parallel()
	const m = uint64(1) << 54
	writers := []struct {
		name  string
		write func(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string)
	}{
		{"lockfloor-raise-m", func(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) {
			if err := etcdlock.New(cli, etcdlock.WithPrefix(prefix)).RaiseFloor(ctx, m); err != nil {
				t.Fatal(err)
			}
		}},
		{"process-with-lower-WithMinToken", func(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) {
			c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m/2)),
				lockclient.WithTTL(10*time.Second), lockclient.WithOwner("lower"))
			defer func() { _ = c.Close(context.Background()) }()
			l, err := c.Acquire(ctx, "other")
			if err != nil {
				t.Fatal(err)
			}
			_ = l.Release(ctx)
		}},
		{"by-hand", func(ctx context.Context, t *testing.T, cli *clientv3.Client, prefix string) {
			if _, err := cli.Put(ctx, prefix+"~floor", "1000"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	c := etcdtest.StartSingle(t)
	for _, w := range writers {
		for _, try := range []bool{false, true} {
			name := w.name + "/Acquire"
			if try {
				name = w.name + "/TryAcquire"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				prefix := uniquePrefix(t)
				a := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
					lockclient.WithTTL(10*time.Second), lockclient.WithOwner("a"))
				defer func() { _ = a.Close(context.Background()) }()
				var stale *lockclient.Lease
				for _, k := range []string{"x1", "x2", "x3", "x4", "x5", "x6", "account:7"} {
					l, err := a.Acquire(ctx, k)
					if err != nil {
						t.Fatal(err)
					}
					stale = l // still held: the stale holder of account:7
				}
				for i := 0; i < 20; i++ { // other writers of the cluster
					if _, err := cli.Put(ctx, prefix[:len(prefix)-1]+"-pad", "x"); err != nil {
						t.Fatal(err)
					}
				}
				// Another process of the service, opened before the loss.
				bk := etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m))
				b := lockclient.New(bk, lockclient.WithTTL(10*time.Second), lockclient.WithOwner("b"))
				defer func() { _ = b.Close(context.Background()) }()
				warm, err := b.Acquire(ctx, "warm")
				if err != nil {
					t.Fatal(err)
				}
				_ = warm.Release(ctx)
				if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
					t.Fatal(err)
				}
				w.write(ctx, t, etcdtest.NewClient(t, c.Members[0].ClientAddr), prefix)
				last, err := bk.LastToken(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if last < stale.Token() {
					t.Fatalf("LastToken of the Backend WithMinToken(%d) after the loss = %d, below token %d granted before", m, last, stale.Token())
				}
				acquire := b.Acquire
				if try {
					acquire = b.TryAcquire
				}
				l, err := acquire(ctx, "account:7")
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = l.Release(context.Background()) }()
				if l.Token() <= stale.Token() || l.Token() <= last {
					t.Fatalf("the Backend WithMinToken(%d) granted account:7 token %d after the loss: not above %d granted before (LastToken %d)",
						m, l.Token(), stale.Token(), last)
				}
				retired, err := etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)).Retire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if retired < l.Token() {
					t.Fatalf("Retire answered %d, below token %d granted", retired, l.Token())
				}
			})
		}
	}
}

// A grant handed over by the releaser (the waiter's queued key) at a revision where the
// floor key held an offset below the waiter's WithMinToken is not priced with it: the
// waiter gives it back, puts the offset back and takes the lock above every token
// granted before (red-team rt46d F1, the hand-over path).
func TestHandOverUnderLowerOffsetRestoredByMinToken(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	const m = uint64(1) << 54
	raw := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	a := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("a"))
	defer func() { _ = a.Close(context.Background()) }()
	b := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix), etcdlock.WithMinToken(m)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("b"))
	defer func() { _ = b.Close(context.Background()) }()
	var high uint64
	for _, k := range []string{"x1", "x2", "x3", "x4", "x5"} {
		l, err := a.Acquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		high = l.Token()
	}
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lockclient.Lease, 1)
	go func() {
		l, err := b.Acquire(ctx, "k")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := raw.Get(ctx, prefix+"k/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b did not queue behind a")
		}
	}
	// The floor key written lower (a process configured lower, after it was lost).
	if _, err := raw.Put(ctx, prefix+"~floor", "1000"); err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	defer func() { _ = lb.Release(context.Background()) }()
	if lb.Token() <= high || lb.Token() <= la.Token() {
		t.Fatalf("b was granted k with token %d under the lowered offset: not above %d and %d granted before", lb.Token(), high, la.Token())
	}
}

// lockfloor -raise M (RaiseFloor without WithMinToken) records an offset of at least M,
// so every later token is above M whatever the revision, and the same raise repeated
// after the prefix lost its data puts the offset back where it was: the tokens are above
// every token granted before the loss. Before, it recorded M minus the revision, and
// the repeat (a lower offset, the revision having grown) priced them below (red-team
// rt46d F1).
func TestRaiseFloorRepeatedAfterPrefixLossGrantsAboveIssued(t *testing.T) {
	t.Parallel()
	c := etcdtest.StartSingle(t)
	cli := etcdtest.NewClient(t, c.Members[0].ClientAddr)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	const raise = uint64(1) << 50
	tool := etcdlock.New(cli, etcdlock.WithPrefix(prefix))
	if err := tool.RaiseFloor(ctx, raise); err != nil {
		t.Fatal(err)
	}
	resp, err := cli.Get(ctx, tool.FloorKey())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("floor key: %v %v", resp, err)
	}
	if off, err := strconv.ParseUint(string(resp.Kvs[0].Value), 10, 64); err != nil || off < raise {
		t.Fatalf("RaiseFloor(%d) recorded offset %q, want at least %d", raise, resp.Kvs[0].Value, raise)
	}
	a := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("a"))
	defer func() { _ = a.Close(context.Background()) }()
	var stale *lockclient.Lease
	for _, k := range []string{"x1", "x2", "x3", "x4", "x5", "account:7"} {
		if stale, err = a.Acquire(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	if err := tool.RaiseFloor(ctx, raise); err != nil { // the same raise, repeated
		t.Fatal(err)
	}
	b := lockclient.New(etcdlock.New(etcdtest.NewClient(t, c.Members[0].ClientAddr), etcdlock.WithPrefix(prefix)),
		lockclient.WithTTL(10*time.Second), lockclient.WithOwner("b"))
	defer func() { _ = b.Close(context.Background()) }()
	l, err := b.Acquire(ctx, "account:7")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(context.Background()) }()
	if l.Token() <= stale.Token() {
		t.Fatalf("after the loss and the same RaiseFloor(%d) again, account:7 was granted %d, not above %d granted before", raise, l.Token(), stale.Token())
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
