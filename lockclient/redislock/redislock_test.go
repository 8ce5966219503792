package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns a go-redis client configured as the package doc recommends, so that
// a cut connection surfaces as ErrUnavailable when the caller's context ends.
func newClient(t testing.TB, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		DialTimeout:           500 * time.Millisecond,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
		ContextTimeoutEnabled: true,
		PoolSize:              8,
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// namespace gives each owner its own client, through its own proxy.
type namespace struct {
	*netproxy.Group // the Faults: one proxy per owner
	t               *testing.T
	prefix          string
	opts            []redislock.Option
	addr            string        // Redis's address, for Queued
	admin           *redis.Client // bypasses the proxies; made by Queued
}

func newNamespace(t *testing.T, opts ...redislock.Option) *namespace {
	addr, prefix := testdb.Redis(t)
	g := netproxy.NewGroup(addr)
	t.Cleanup(g.Close)
	return &namespace{Group: g, t: t, prefix: prefix, opts: opts, addr: addr}
}

func (n *namespace) client(owner string) *redis.Client {
	n.t.Helper()
	p, err := n.Proxy(owner)
	if err != nil {
		n.t.Fatal(err)
	}
	return newClient(n.t, p.Addr())
}

func (n *namespace) backend(owner string) *redislock.Backend {
	return redislock.New(n.client(owner), append([]redislock.Option{redislock.WithPrefix(n.prefix)}, n.opts...)...)
}

func (n *namespace) Backend(owner string) lockclient.Backend { return n.backend(owner) }
func (n *namespace) Faults() locktest.Faults                 { return n.Group }

// Queued implements locktest.QueueCounter: the waiters of a lock are its queue's
// members (a grant removes its waiter from the queue).
func (n *namespace) Queued(ctx context.Context, key string) (int, error) {
	if n.admin == nil {
		n.admin = newClient(n.t, n.addr)
	}
	c, err := n.admin.ZCard(ctx, redislock.New(n.admin, redislock.WithPrefix(n.prefix)).QueueKey(key)).Result()
	return int(c), err
}

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Harness{TTL: locktest.NetworkTTL, FIFO: true, New: func(t *testing.T) locktest.Namespace {
		return newNamespace(t)
	}})
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// A grant request whose reply was lost and that the client library retries gets its
// own grant back; any other request of the same session is refused (not re-entrant).
func TestGrantRetryIsIdempotent(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	s := locktest.OpenSession(t, n.Backend("a"), "a", time.Minute)
	g1, err := redislock.TryAcquireRequest(ctx, s, "k", "00112233")
	if err != nil {
		t.Fatal(err)
	}
	g2, err := redislock.TryAcquireRequest(ctx, s, "k", "00112233")
	if err != nil {
		t.Fatalf("retried request: %v", err)
	}
	if g1.Token != g2.Token || g1.Data != g2.Data {
		t.Fatalf("retry returned %+v, first %+v", g2, g1)
	}
	if _, err := redislock.TryAcquireRequest(ctx, s, "k", "44556677"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("another request of the same session = %v, want ErrHeld", err)
	}
	if err := s.Release(ctx, g2); err != nil {
		t.Fatal(err)
	}
}

// The session-level suite. Expiry is Redis's: the lock key carries the TTL as PX, and
// once the server expires it the holder is told at its next renewal.
func TestSessionConformance(t *testing.T) {
	locktest.RunSession(t, locktest.SessionHarness{
		New: func(t *testing.T) locktest.Namespace {
			return newNamespace(t, redislock.WithPollInterval(time.Millisecond, 5*time.Millisecond))
		},
		// Another session holding a grant value that is not its own (or a forged one).
		ForeignGrant: func(g lockclient.Grant) lockclient.Grant {
			g.Data = "00:00:" + strconv.FormatUint(g.Token, 10) + ":b"
			return g
		},
		SecondRelease: lockclient.ErrLeaseLost, // the key is gone
		ServerClock: func(t *testing.T, ns locktest.Namespace) locktest.ServerClock {
			n := ns.(*namespace)
			admin := newClient(t, n.Target())
			return serverClock{admin: admin, keys: redislock.New(admin, redislock.WithPrefix(n.prefix))}
		},
	})
}

// serverClock reads and moves a lock key's expiry at the Redis server.
type serverClock struct {
	admin *redis.Client      // bypasses the proxies
	keys  *redislock.Backend // names the keys
}

func (c serverClock) CheckExpiry(t *testing.T, name string, l *lockclient.Lease, ttl time.Duration) {
	ctx := ctxT(t, 10*time.Second)
	key := c.keys.LockKey(name)
	pttl, err := c.admin.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl <= ttl-5*time.Second || pttl > ttl {
		t.Fatalf("PTTL %v, want about %v", pttl, ttl)
	}
	v, err := c.admin.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.SplitN(v, ":", 4); len(parts) != 4 || parts[2] != strconv.FormatUint(l.Token(), 10) || parts[3] != "a" {
		t.Fatalf("lock value %q does not name session, request, token %d and owner", v, l.Token())
	}
	if tok, err := c.admin.Get(ctx, c.keys.TokenKey()).Uint64(); err != nil || tok != l.Token() {
		t.Fatalf("token counter %d (%v), want %d", tok, err, l.Token())
	}
}

// Expire makes the server expire the key (as its clock would after TTL).
func (c serverClock) Expire(t *testing.T, name string) {
	if err := c.admin.PExpire(ctxT(t, 10*time.Second), c.keys.LockKey(name), time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
}

// A waiter polls (the grant script, or PTTL) at the poll interval, not faster, and is
// granted within about one poll interval of the release.
func TestWaitPollsWithoutBusyLoop(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	ttl := 5 * time.Second
	a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
	defer a.Close(context.Background())
	rb := n.client("b")
	var polls atomic.Int64
	rb.AddHook(countPTTL{&polls})
	b := lockclient.New(redislock.New(rb, redislock.WithPrefix(n.prefix)), lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
	defer b.Close(context.Background())
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lockclient.Lease, 1)
	go func() {
		lb, err := b.Acquire(ctx, "k")
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		got <- lb
	}()
	hold := 1500 * time.Millisecond
	time.Sleep(hold)
	p := polls.Load()
	if max := int64(hold/redislock.DefaultPollMin) + 2; p < 3 || p > max {
		t.Fatalf("%d polls in %v, want 3..%d", p, hold, max)
	}
	released := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case lb := <-got:
		d := time.Since(released)
		t.Logf("%d polls while held for %v; granted %v after the release", p, hold, d)
		if d > redislock.DefaultPollMax+800*time.Millisecond {
			t.Fatalf("granted %v after the release", d)
		}
		if lb != nil {
			lb.Release(ctx)
		}
	case <-ctx.Done():
		t.Fatal("waiter not granted")
	}
}

type countPTTL struct{ n *atomic.Int64 }

func (h countPTTL) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countPTTL) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h countPTTL) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "pttl" || cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// BenchmarkAcquireRelease compares one uncontended lockclient Acquire+Release on
// redislock (two Lua scripts) with the bare pair it replaces, SET NX PX + DEL, on the
// same server in the same run.
func BenchmarkAcquireRelease(b *testing.B) {
	addr, prefix := testdb.Redis(b)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	b.Run("redislock", func(b *testing.B) {
		c := lockclient.New(redislock.New(rdb, redislock.WithPrefix(prefix)))
		defer c.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			l, err := c.Acquire(ctx, "k")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-SETNX-DEL", func(b *testing.B) {
		key := prefix + "raw"
		b.ReportAllocs()
		for b.Loop() {
			if err := rdb.Do(ctx, "SET", key, "v", "NX", "PX", 10000).Err(); err != nil {
				b.Fatal(err) // redis.Nil if the key existed
			}
			if err := rdb.Del(ctx, key).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
