package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// heldLeave holds the background delete of the queue key a waiter abandons (see
// etcdlock.SetLeaveHook) until release is closed; entered is closed when it starts,
// deleted when the delete is over.
type heldLeave struct {
	entered, release, deleted chan struct{}
}

func holdLeave(b *etcdlock.Backend) *heldLeave {
	h := &heldLeave{entered: make(chan struct{}), release: make(chan struct{}), deleted: make(chan struct{})}
	etcdlock.SetLeaveHook(b, func(_ string, done bool) {
		if done {
			close(h.deleted)
			return
		}
		close(h.entered)
		<-h.release
	})
	return h
}

// abandonedEnv is one etcd, a backend whose abandoned-key deletes are held, and a
// helper that waits for a number of keys under a lock.
type abandonedEnv struct {
	t       *testing.T
	cluster *etcdtest.Cluster
	prefix  string
	obs     *clientv3.Client
}

func newAbandonedEnv(t *testing.T) *abandonedEnv {
	cluster := etcdtest.StartSingle(t)
	return &abandonedEnv{t: t, cluster: cluster, prefix: uniquePrefix(t), obs: cluster.Client(t)}
}

func (a *abandonedEnv) backend() *etcdlock.Backend {
	b, _ := a.countingBackend()
	return b
}

// countingBackend is a backend with its own etcd client; watches counts the watches
// that client opens (a waiting session opens one once it is in line).
func (a *abandonedEnv) countingBackend() (*etcdlock.Backend, *atomic.Int64) {
	cli := a.cluster.Client(a.t)
	cw := &countingWatcher{Watcher: cli.Watcher}
	cli.Watcher = cw
	return etcdlock.New(cli, etcdlock.WithPrefix(a.prefix), etcdlock.WithRequestTimeout(requestTimeout)), &cw.watches
}

func (a *abandonedEnv) open(ctx context.Context, b *etcdlock.Backend, owner string) lockclient.Session {
	a.t.Helper()
	s, err := b.Open(ctx, owner, 10*time.Second)
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func (a *abandonedEnv) waitKeys(ctx context.Context, name string, n int64) {
	a.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := a.obs.Get(ctx, a.prefix+name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			a.t.Fatal(err)
		}
		if resp.Count == n {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("lock %s has %d keys, want %d", name, resp.Count, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// abandonWait makes s (whose etcd client opened watches so far) wait for key behind its
// holder and give up once in line (watching): s's queue key is left, and its
// background delete is held by h (entered).
func abandonWait(t *testing.T, ctx context.Context, s lockclient.Session, watches *atomic.Int64, h *heldLeave, key string) {
	t.Helper()
	before := watches.Load()
	wctx, wcancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- s.Wait(wctx, key) }()
	for deadline := time.Now().Add(10 * time.Second); watches.Load() == before; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the Wait never got in line")
		}
	}
	wcancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned Wait = %v, want context.Canceled", err)
	}
	select {
	case <-h.entered:
	case <-ctx.Done():
		t.Fatal("the abandoned key's delete never started")
	}
}

// A waiter that gives up leaves the queue with a delete that runs in the background. A
// later Wait of the same session may find that key still there and take it as its place
// in the queue (same etcd key, same create revision), and be granted the lock through
// it. The late delete must then not remove the grant's key: that would free the lock
// while this session still trusts its grant (another session would be granted it, and
// the Release would fail with ErrLeaseLost). Red-team rt51d saw such a loss twice
// under load; the hook makes the interleaving deterministic.
func TestAbandonedKeyDeleteSparesLaterGrant(t *testing.T) {
	t.Parallel()
	a := newAbandonedEnv(t)
	ctx := ctxT(t, 30*time.Second)
	b, watches := a.countingBackend()
	h := holdLeave(b)
	s := a.open(ctx, b, "s")
	other := a.open(ctx, a.backend(), "other")

	hg, err := other.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	abandonWait(t, ctx, s, watches, h, "k")

	// s waits again while the delete of its abandoned key is held.
	errc := make(chan error, 1)
	go func() { errc <- s.Wait(ctx, "k") }()
	// Let it take its old key (still there) as its place behind other's grant; had it not
	// yet, it takes the key after the release instead, first in line: the same outcome.
	time.Sleep(50 * time.Millisecond)
	if err := other.Release(ctx, hg); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	g, err := s.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire after the holder released: %v", err)
	}
	close(h.release)
	<-h.deleted

	if og, err := other.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		if err == nil {
			t.Errorf("another session was granted the lock (token %d) while s holds it (token %d): the abandoned key's delete removed s's grant", og.Token, g.Token)
		} else {
			t.Errorf("TryAcquire of the held lock by another session = %v, want ErrHeld", err)
		}
	}
	if err := s.Renew(ctx, g); err != nil {
		t.Errorf("Renew of the grant after the abandoned key's delete: %v", err)
	}
	if err := s.Release(ctx, g); err != nil {
		t.Errorf("Release of the grant after the abandoned key's delete: %v", err)
	}
}

// The same with the lock handed to the abandoned key by its releaser (written as a grant
// before the background delete runs): nobody takes that grant, and the lock must not
// stay blocked by it — it is freed within moments, not at the session lease's end.
func TestAbandonedKeyHandedOverIsFreed(t *testing.T) {
	t.Parallel()
	a := newAbandonedEnv(t)
	ctx := ctxT(t, 30*time.Second)
	b, watches := a.countingBackend()
	h := holdLeave(b)
	s := a.open(ctx, b, "s")
	first := a.open(ctx, a.backend(), "first")
	holder := a.open(ctx, a.backend(), "holder")
	third := a.open(ctx, a.backend(), "third")

	// holder takes the lock through the queue (behind first), so that its release hands
	// the lock over to the key waiting behind it.
	fg, err := first.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- holder.Wait(ctx, "k") }()
	a.waitKeys(ctx, "k", 2)
	if err := first.Release(ctx, fg); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	hg, err := holder.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}

	abandonWait(t, ctx, s, watches, h, "k")
	if err := holder.Release(ctx, hg); err != nil {
		t.Fatal(err)
	}
	resp, err := a.obs.Get(ctx, a.prefix+"k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision == resp.Kvs[0].ModRevision {
		t.Fatalf("after the release, lock k's keys are %v, want the abandoned key alone, handed the lock", resp.Kvs)
	}
	close(h.release)
	<-h.deleted

	deadline := time.Now().Add(5 * time.Second)
	for {
		tg, err := third.TryAcquire(ctx, "k")
		if err == nil {
			if err := third.Release(ctx, tg); err != nil {
				t.Fatal(err)
			}
			return
		}
		if !errors.Is(err, lockclient.ErrHeld) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock handed to an abandoned key is still held 5s later")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Many callers of one Client (one session) and of a second Client acquire two locks with
// short contexts, so that waits are often given up and the same session's next attempt
// meets its abandoned key, and release them at once. No grant may be lost before its
// release (the lock freed under a holder that trusts it), and no two holders may overlap.
func TestAbandonedWaitsKeepGrants(t *testing.T) {
	t.Parallel()
	a := newAbandonedEnv(t)
	ctx := ctxT(t, 60*time.Second)
	run := envDuration(t, "ETCDLOCK_ABANDONED_STRESS", 3*time.Second)
	var holders [2]atomic.Int32
	var grants, lost atomic.Int64
	var wg sync.WaitGroup
	for c := range 2 {
		cl := lockclient.New(a.backend(), lockclient.WithOwner(fmt.Sprint("c", c)), lockclient.WithTTL(10*time.Second),
			lockclient.WithRetry(time.Millisecond, 10*time.Millisecond))
		t.Cleanup(func() { _ = cl.Close(context.Background()) })
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(c), uint64(w)))
				for end := time.Now().Add(run); time.Now().Before(end); {
					k := rng.IntN(2)
					var l *lockclient.Lease
					var err error
					if rng.IntN(4) == 0 {
						l, err = cl.TryAcquire(ctx, fmt.Sprint("k", k))
					} else {
						actx, cancel := context.WithTimeout(ctx, time.Duration(2+rng.IntN(40))*time.Millisecond)
						l, err = cl.Acquire(actx, fmt.Sprint("k", k))
						cancel()
					}
					if err != nil {
						continue
					}
					grants.Add(1)
					if n := holders[k].Add(1); n != 1 {
						t.Errorf("lock k%d held by %d holders at once", k, n)
					}
					time.Sleep(time.Duration(rng.IntN(2)) * time.Millisecond)
					holders[k].Add(-1)
					if err := l.Release(ctx); err != nil {
						lost.Add(1)
						t.Errorf("c%d w%d: release of k%d (token %d) right after its grant: %v", c, w, k, l.Token(), err)
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d grants, %d lost", grants.Load(), lost.Load())
}

// envDuration is the duration in environment variable name (time.ParseDuration), def
// when it is unset.
func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration", name, v)
	}
	return d
}
