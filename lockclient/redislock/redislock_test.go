package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
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

// suiteTTL is the lease TTL of the conformance suite: long enough that renewals through
// the race detector, a TCP proxy and a heavily loaded machine always make it (the suite
// gives a renewal about TTL·5/12 before the local deadline: 833ms). 1s failed once in
// many runs (a renewal took over 400ms) at a load average of 10 on two CPUs.
const suiteTTL = 2 * time.Second

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
}

func newNamespace(t *testing.T) *namespace {
	addr, prefix := testdb.Redis(t)
	g := netproxy.NewGroup(addr)
	t.Cleanup(g.Close)
	return &namespace{Group: g, t: t, prefix: prefix}
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
	return redislock.New(n.client(owner), redislock.WithPrefix(n.prefix))
}

func (n *namespace) Backend(owner string) lockclient.Backend { return n.backend(owner) }
func (n *namespace) Faults() locktest.Faults                 { return n.Group }

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Harness{TTL: suiteTTL, New: func(t *testing.T) locktest.Namespace {
		return newNamespace(t)
	}})
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func openSession(t testing.TB, b lockclient.Backend, owner string, ttl time.Duration) lockclient.Session {
	t.Helper()
	s, err := b.Open(context.Background(), owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// The Session contract's answers, one by one.
func TestSessionAnswers(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	ttl := 300 * time.Millisecond
	a := openSession(t, n.Backend("a"), "a", ttl)
	b := openSession(t, n.Backend("b"), "b", ttl)

	ga, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("same session TryAcquire = %v, want ErrHeld", err)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("other session TryAcquire = %v, want ErrHeld", err)
	}
	if err := a.Renew(ctx, ga); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	// Another session holding a grant value that is not its own (or a forged one).
	forged := ga
	forged.Data = "00:00:" + strconv.FormatUint(ga.Token, 10) + ":b"
	if err := b.Renew(ctx, forged); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Renew of a foreign grant = %v, want ErrLeaseLost", err)
	}
	if err := b.Release(ctx, forged); !errors.Is(err, lockclient.ErrNotOwner) {
		t.Fatalf("Release of a foreign grant = %v, want ErrNotOwner", err)
	}
	if err := a.Release(ctx, ga); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("second Release = %v, want ErrLeaseLost (key gone)", err)
	}

	// Expired and not retaken.
	ga, err = a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if err := a.Renew(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Renew after expiry = %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Release after expiry = %v, want ErrLeaseLost", err)
	}

	// Expired and retaken: the stale holder can neither renew nor release.
	ga, err = a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	gb, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire of an expired key: %v", err)
	}
	if gb.Token <= ga.Token {
		t.Fatalf("takeover token %d <= %d", gb.Token, ga.Token)
	}
	if err := a.Renew(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("stale Renew = %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, lockclient.ErrNotOwner) {
		t.Fatalf("stale Release = %v, want ErrNotOwner", err)
	}
	if err := b.Renew(ctx, gb); err != nil {
		t.Fatalf("new holder's Renew after the stale Release: %v", err)
	}
	if err := b.Release(ctx, gb); err != nil {
		t.Fatal(err)
	}
}

// A grant request whose reply was lost and that the client library retries gets its
// own grant back; any other request of the same session is refused (not re-entrant).
func TestGrantRetryIsIdempotent(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	s := openSession(t, n.Backend("a"), "a", time.Minute)
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

// Tokens come from one counter: under concurrency on several keys every token is
// distinct, a grant that starts after another one completed has a larger token, and
// the grants of one key are ordered like their tokens.
func TestTokensIncreaseAcrossKeysUnderConcurrency(t *testing.T) {
	addr, prefix := testdb.Redis(t)
	type rec struct {
		key        string
		token      uint64
		start, end time.Time
		relStart   time.Time
	}
	const workers, rounds, keys = 8, 25, 3
	var mu sync.Mutex
	var recs []rec
	ctx := ctxT(t, 60*time.Second)
	var wg sync.WaitGroup
	for w := range workers {
		b := redislock.New(newClient(t, addr), redislock.WithPrefix(prefix), redislock.WithPollInterval(time.Millisecond, 5*time.Millisecond))
		c := lockclient.New(b, lockclient.WithTTL(10*time.Second), lockclient.WithOwner(fmt.Sprintf("w%d", w)))
		t.Cleanup(func() { c.Close(context.Background()) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				key := fmt.Sprintf("key-%d", (w+i)%keys)
				if rand.N(4) == 0 {
					key = fmt.Sprintf("own-%d-%d", w, i)
				}
				r := rec{key: key, start: time.Now()}
				l, err := c.Acquire(ctx, key)
				r.end = time.Now()
				if err != nil {
					t.Errorf("Acquire %s: %v", key, err)
					return
				}
				r.token = l.Token()
				r.relStart = time.Now()
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
				mu.Lock()
				recs = append(recs, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[uint64]bool{}
	for _, a := range recs {
		if seen[a.token] {
			t.Fatalf("token %d issued twice", a.token)
		}
		seen[a.token] = true
		for _, b := range recs {
			if a.end.Before(b.start) && a.token >= b.token {
				t.Fatalf("grant of %s (token %d) completed before grant of %s (token %d) started", a.key, a.token, b.key, b.token)
			}
			if a.key == b.key && a.token < b.token && !a.relStart.Before(b.end) {
				t.Fatalf("key %s: token %d granted before token %d was released", a.key, b.token, a.token)
			}
		}
	}
	t.Logf("%d grants, tokens all distinct and ordered", len(recs))
}

// Expiry is Redis's: the lock key carries the TTL as PX, and once the server expires it
// the holder is told at its next renewal, long before its own deadline, and another
// client takes the lock.
func TestExpiryIsJudgedByServerClock(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	ttl := 30 * time.Second
	ba := n.backend("a")
	a := lockclient.New(ba, lockclient.WithOwner("a"), lockclient.WithTTL(ttl), lockclient.WithRenewInterval(50*time.Millisecond))
	defer a.Close(context.Background())
	b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
	defer b.Close(context.Background())

	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	key := ba.LockKey("k")
	pttl, err := admin.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if pttl <= ttl-5*time.Second || pttl > ttl {
		t.Fatalf("PTTL %v, want about %v", pttl, ttl)
	}
	v, err := admin.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if parts := strings.SplitN(v, ":", 4); len(parts) != 4 || parts[2] != strconv.FormatUint(la.Token(), 10) || parts[3] != "a" {
		t.Fatalf("lock value %q does not name session, request, token %d and owner", v, la.Token())
	}
	if tok, err := admin.Get(ctx, ba.TokenKey()).Uint64(); err != nil || tok != la.Token() {
		t.Fatalf("token counter %d (%v), want %d", tok, err, la.Token())
	}
	// The server expires the key (as its clock would after TTL).
	if err := admin.PExpire(ctx, key, time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("holder not told its lease was lost after the server expired it")
	}
	if !errors.Is(la.Err(), lockclient.ErrLeaseLost) || time.Until(la.Deadline()) < 20*time.Second {
		t.Fatalf("Err = %v, %v before the local deadline", la.Err(), time.Until(la.Deadline()))
	}
	lb, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire after the server expired the grant: %v", err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("tokens %d then %d", la.Token(), lb.Token())
	}
	lb.Release(ctx)
}

// A waiter polls PTTL at the poll interval, not faster, and is granted within about one
// poll interval of the release.
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
		if cmd.Name() == "pttl" {
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
