package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// queueEnv is one etcd with clients that each have their own etcd client, as separate
// processes would.
type queueEnv struct {
	t        *testing.T
	cluster  *etcdtest.Cluster
	observer *clientv3.Client
	prefix   string
}

func newQueueEnv(t *testing.T) *queueEnv {
	cluster := etcdtest.StartSingle(t)
	return &queueEnv{t: t, cluster: cluster, observer: cluster.Client(t), prefix: uniquePrefix(t)}
}

// client returns a lockclient.Client with its own etcd client; watches counts the
// watches that etcd client opens.
func (q *queueEnv) client(owner string) (c *lockclient.Client, watches *atomic.Int64) {
	cli := q.cluster.Client(q.t)
	cw := &countingWatcher{Watcher: cli.Watcher}
	cli.Watcher = cw
	c = lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(q.prefix), etcdlock.WithRequestTimeout(requestTimeout)),
		lockclient.WithOwner(owner), lockclient.WithTTL(testTTL), lockclient.WithRetry(5*time.Millisecond, 50*time.Millisecond))
	q.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	return c, &cw.watches
}

// keys returns the number of keys of lock name at etcd (holder and waiters).
func (q *queueEnv) keys(ctx context.Context, name string) int64 {
	q.t.Helper()
	resp, err := q.observer.Get(ctx, q.prefix+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		q.t.Fatal(err)
	}
	return resp.Count
}

// waitKeys waits until lock name has n keys at etcd.
func (q *queueEnv) waitKeys(ctx context.Context, name string, n int64) {
	q.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for q.keys(ctx, name) != n {
		if time.Now().After(deadline) {
			q.t.Fatalf("lock %s has %d keys, want %d", name, q.keys(ctx, name), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type countingWatcher struct {
	clientv3.Watcher
	watches atomic.Int64
}

func (w *countingWatcher) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	w.watches.Add(1)
	return w.Watcher.Watch(ctx, key, opts...)
}

// acquired is one grant seen by a waiter.
type acquired struct {
	who   int
	token uint64
}

// Waiters are served in the order they arrived, each woken only by its predecessor: a
// waiter opens one watch for the whole wait (its predecessor never changes but by being
// released), where a herd would open one per release it sees.
func TestQueueFIFOAndNoHerd(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t)
	ctx := ctxT(t, 60*time.Second)
	holder, _ := q.client("holder")
	lh, err := holder.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var (
		mu    sync.Mutex
		order []acquired
		wg    sync.WaitGroup
		count []*atomic.Int64
	)
	for i := range n {
		c, watches := q.client(fmt.Sprintf("w%d", i))
		count = append(count, watches)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(ctx, "k")
			if err != nil {
				t.Errorf("w%d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, acquired{i, l.Token()})
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			if err := l.Release(ctx); err != nil {
				t.Errorf("w%d release: %v", i, err)
			}
		}()
		q.waitKeys(ctx, "k", int64(i+2)) // queued before the next one starts
	}
	if err := lh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(order) != n {
		t.Fatalf("%d grants, want %d", len(order), n)
	}
	for i, a := range order {
		if a.who != i {
			t.Fatalf("grant order %v, want arrival order 0..%d", order, n-1)
		}
		if i > 0 && a.token <= order[i-1].token {
			t.Fatalf("tokens not increasing in grant order: %v", order)
		}
	}
	if lh.Token() >= order[0].token {
		t.Fatalf("first waiter's token %d <= holder's %d", order[0].token, lh.Token())
	}
	total := int64(0)
	for _, w := range count {
		total += w.Load()
	}
	t.Logf("grant order %v; %d watches opened by %d waiters over %d handoffs", order, total, n, n)
	if total > n+2 {
		t.Fatalf("%d watches for %d waiters served in turn, want about one each (a herd opens about %d)", total, n, n*(n+1)/2)
	}
	if k := q.keys(ctx, "k"); k != 0 {
		t.Fatalf("%d keys left after every waiter released", k)
	}
}

// A waiter whose context ends leaves the queue at once (its key is deleted), and the
// waiters behind it are not blocked: neither the one that watched it (it watches the next
// key ahead) nor the one the holder would have handed the lock to.
func TestQueueCancelledWaiterDoesNotBlock(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t)
	ctx := ctxT(t, 60*time.Second)
	holder, _ := q.client("holder")
	lh, err := holder.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	cancels := make([]context.CancelFunc, n)
	results := make([]chan error, n)
	grants := make(chan acquired, n)
	for i := range n {
		c, _ := q.client(fmt.Sprintf("w%d", i))
		wctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		results[i] = make(chan error, 1)
		go func() {
			l, err := c.Acquire(wctx, "k")
			if err == nil {
				grants <- acquired{i, l.Token()}
				time.Sleep(5 * time.Millisecond)
				err = l.Release(ctx)
			}
			results[i] <- err
		}()
		q.waitKeys(ctx, "k", int64(i+2))
	}
	// w0 is the holder's successor (the hand-over's target), w2 the key w3 watches.
	for _, i := range []int{0, 2} {
		start := time.Now()
		cancels[i]()
		if err := <-results[i]; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled w%d: %v, want context.Canceled", i, err)
		}
		q.waitKeys(ctx, "k", int64(n+1-map[int]int{0: 1, 2: 2}[i]))
		t.Logf("w%d's key left the queue %v after its cancel", i, time.Since(start))
	}
	if err := lh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{1, 3} {
		select {
		case a := <-grants:
			if a.who != want {
				t.Fatalf("w%d granted, want w%d", a.who, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("w%d not granted within 5s: lost wake-up", want)
		}
		if err := <-results[want]; err != nil {
			t.Fatalf("w%d: %v", want, err)
		}
	}
}

// Tokens increase in grant order across keys, even though a waiter's place in its queue
// was taken before another lock was granted: the grant writes a new revision.
func TestQueueTokensInGrantOrderAcrossKeys(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t)
	ctx := ctxT(t, 30*time.Second)
	h, _ := q.client("h")
	w, _ := q.client("w")
	x, _ := q.client("x")
	la, err := h.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lockclient.Lease, 1)
	go func() {
		l, err := w.Acquire(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	q.waitKeys(ctx, "a", 2) // w is queued on a
	lb, err := x.Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lw := <-got
	if lw == nil {
		t.FailNow()
	}
	if lw.Token() <= lb.Token() {
		t.Fatalf("a granted after b with token %d <= b's %d", lw.Token(), lb.Token())
	}
	// The same with the waiter taking the lock itself (its predecessor left without a
	// hand-over: its lease was revoked).
	go func() {
		l, err := h.Acquire(ctx, "a")
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	q.waitKeys(ctx, "a", 2)
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb2, err := x.Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := q.observer.Get(ctx, q.prefix+"a/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("holder of a: %v %v", resp, err)
	}
	if _, err := q.observer.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	lh := <-got
	if lh == nil {
		t.FailNow()
	}
	if lh.Token() <= lb2.Token() {
		t.Fatalf("a granted after b with token %d <= b's %d", lh.Token(), lb2.Token())
	}
	lh.Release(ctx)
	lb2.Release(ctx)
}

// TryAcquire of a lock someone holds or waits for is ErrHeld and leaves no key behind.
func TestQueueTryAcquireLeavesNoKey(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t)
	ctx := ctxT(t, 30*time.Second)
	h, _ := q.client("h")
	w, _ := q.client("w")
	tr, _ := q.client("try")
	lh, err := h.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrHeld", err)
	}
	q.waitKeys(ctx, "k", 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if l, err := w.Acquire(wctx, "k"); err == nil {
			l.Release(ctx)
		}
	}()
	q.waitKeys(ctx, "k", 2)
	if _, err := tr.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire with a waiter = %v, want ErrHeld", err)
	}
	if k := q.keys(ctx, "k"); k != 2 {
		t.Fatalf("%d keys after TryAcquire, want 2 (holder and waiter)", k)
	}
	lh.Release(ctx)
	<-done
	if l, err := tr.TryAcquire(ctx, "k"); err != nil {
		t.Fatalf("TryAcquire of a free lock: %v", err)
	} else {
		l.Release(ctx)
	}
}

// Client.Close ends a waiting Acquire at once, and the waiter's key leaves the queue
// with the session lease.
func TestQueueCloseEndsWait(t *testing.T) {
	t.Parallel()
	q := newQueueEnv(t)
	ctx := ctxT(t, 30*time.Second)
	h, _ := q.client("h")
	w, _ := q.client("w")
	lh, err := h.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer lh.Release(ctx)
	res := make(chan error, 1)
	go func() {
		_, err := w.Acquire(ctx, "k")
		res <- err
	}()
	q.waitKeys(ctx, "k", 2)
	start := time.Now()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if !errors.Is(err, lockclient.ErrClosed) {
			t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Acquire outlived Client.Close by 5s")
	}
	t.Logf("Acquire ended %v after Close", time.Since(start))
	q.waitKeys(ctx, "k", 1)
}
