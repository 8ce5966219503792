package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// serverMicros is the Redis server's clock (TIME) in microseconds.
func serverMicros(t *testing.T, ctx context.Context, admin *redis.Client) uint64 {
	t.Helper()
	now, err := admin.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return uint64(now.UnixMicro())
}

// deleteAll deletes every key of the prefix, as a Redis restarted without persistence
// (or flushed) would have lost them.
func deleteAll(t *testing.T, ctx context.Context, admin *redis.Client, prefix string) {
	t.Helper()
	keys, err := admin.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no keys to delete")
	}
	if err := admin.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// lostCounterSetup returns a fresh namespace's backend, a client on it (closed with the
// test) and an admin connection to delete its keys.
func lostCounterSetup(t *testing.T) (context.Context, *redis.Client, *namespace, *redislock.Backend, *lockclient.Client) {
	t.Helper()
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	b := n.backend("a")
	c := lockclient.New(b, lockclient.WithTTL(locktest.NetworkTTL))
	t.Cleanup(func() { c.Close(context.Background()) })
	return ctx, admin, n, b, c
}

// A lost counter (every key of the service gone) does not restart tokens below those
// granted before the loss: the grant that finds no counter seeds it from the server's
// clock, in microseconds, and later grants INCR it.
func TestLostCounterDoesNotGoBack(t *testing.T) {
	ctx, admin, n, b, c := lostCounterSetup(t)

	// A holder that is still running when Redis loses its keys, after other grants.
	var old *lockclient.Lease
	for _, key := range []string{"x1", "x2", "x3", "account:2"} {
		l, err := c.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		old = l
	}
	deleteAll(t, ctx, admin, n.prefix)

	before := serverMicros(t, ctx, admin)
	q := lockclient.New(n.Backend("q"), lockclient.WithTTL(locktest.NetworkTTL))
	defer q.Close(context.Background())
	l, err := q.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	after := serverMicros(t, ctx, admin)
	if l.Token() <= old.Token() {
		t.Fatalf("after the loss: token %d, not above token %d granted before it", l.Token(), old.Token())
	}
	if l.Token() < before || l.Token() > after {
		t.Fatalf("first token after the loss %d, want the server's clock in µs, in [%d, %d]", l.Token(), before, after)
	}
	// Then the counter increments as before, for every key.
	l2, err := q.Acquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Token() != l.Token()+1 {
		t.Fatalf("next token %d, want %d", l2.Token(), l.Token()+1)
	}
	if got, err := b.LastToken(ctx); err != nil || got != l2.Token() {
		t.Fatalf("LastToken %d (%v), want %d", got, err, l2.Token())
	}
	l.Release(ctx)
	l2.Release(ctx)
}

// An existing counter is never moved by the seeding, whether it is below the server's
// clock (a deployment from before the seeding) or above it (a raised floor): a grant
// INCRs it. A raise on a missing counter seeds it too, so WithMinToken after a loss
// does not restart tokens at its minimum.
func TestExistingCounterNeverLowered(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	b := n.backend("a")
	s := locktest.OpenSession(t, b, "a", time.Minute)
	now := serverMicros(t, ctx, admin)
	for _, start := range []uint64{41, now + 1_000_000_000_000, 1<<63 - 10} {
		if err := admin.Set(ctx, b.TokenKey(), start, 0).Err(); err != nil {
			t.Fatal(err)
		}
		g, err := s.TryAcquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if g.Token != start+1 {
			t.Fatalf("counter at %d: token %d, want %d", start, g.Token, start+1)
		}
		if err := s.Release(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := b.RaiseFloor(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if got, err := b.LastToken(ctx); err != nil || got != start+1 {
			t.Fatalf("counter at %d, after a grant and RaiseFloor(5): LastToken %d (%v), want %d", start, got, err, start+1)
		}
	}

	// A missing counter and a raise: at least the raise, at least the clock.
	for _, min := range []uint64{0, 5000, 1 << 60} {
		if err := admin.Del(ctx, b.TokenKey()).Err(); err != nil {
			t.Fatal(err)
		}
		before := serverMicros(t, ctx, admin)
		if err := b.RaiseFloor(ctx, min); err != nil {
			t.Fatal(err)
		}
		got, err := b.LastToken(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got < min || got < before || (min > before && got != min) {
			t.Fatalf("RaiseFloor(%d) on a missing counter (clock %d µs): counter %d, want max(min, clock)", min, before, got)
		}
	}

	// WithMinToken on a lost counter: tokens above the clock, not just above the minimum.
	if err := admin.Del(ctx, b.TokenKey()).Err(); err != nil {
		t.Fatal(err)
	}
	before := serverMicros(t, ctx, admin)
	c := lockclient.New(redislock.New(n.client("m"), redislock.WithPrefix(n.prefix), redislock.WithMinToken(5000)),
		lockclient.WithTTL(locktest.NetworkTTL))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() <= before {
		t.Fatalf("WithMinToken(5000) on a lost counter: token %d, want above the clock %d µs", l.Token(), before)
	}
}

// LastToken after the counter was lost is not 0: it seeds the counter from the
// server's clock, as the next grant would, so a floor raised to it (the failover hook,
// a switch to another lock service) is above every token granted before the loss.
func TestLastTokenAfterLostCounter(t *testing.T) {
	ctx, admin, n, b, c := lostCounterSetup(t)
	old, err := c.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	deleteAll(t, ctx, admin, n.prefix)
	last, err := b.LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < old.Token() {
		t.Fatalf("LastToken after the loss = %d, below token %d granted before it", last, old.Token())
	}
	l, err := c.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() <= last {
		t.Fatalf("token %d granted after LastToken %d", l.Token(), last)
	}
}
