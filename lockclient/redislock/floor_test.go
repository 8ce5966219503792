package redislock_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

func TestFloor(t *testing.T) {
	locktest.RunFloor(t, locktest.Harness{TTL: locktest.NetworkTTL, New: func(t *testing.T) locktest.Namespace {
		return newNamespace(t)
	}})
}

// The raise compares decimal strings: by length first (99 < 100), then digit by digit,
// and never lowers the counter. (The counter starts at 0, as one created before the
// clock seeding would: a missing counter is seeded from the clock, see
// TestExistingCounterNeverLowered.)
func TestRaiseFloorComparesNumbers(t *testing.T) {
	n := newNamespace(t)
	b := n.backend("admin")
	ctx := ctxT(t, 10*locktest.NetworkTTL)
	if got, err := b.LastToken(ctx); err != nil || got == 0 {
		t.Fatalf("LastToken of a fresh counter = %d, %v; want the clock seed", got, err)
	}
	if err := newClient(t, n.Target()).Set(ctx, b.TokenKey(), 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ raise, want uint64 }{{95, 95}, {100, 100}, {99, 100}, {150, 150}, {149, 150}, {1000, 1000}, {999, 1000}, {0, 1000}}
	for _, s := range steps {
		if err := b.RaiseFloor(ctx, s.raise); err != nil {
			t.Fatal(err)
		}
		if got, err := b.LastToken(ctx); err != nil || got != s.want {
			t.Fatalf("after RaiseFloor(%d): LastToken = %d, %v; want %d", s.raise, got, err, s.want)
		}
	}
	if err := b.RaiseFloor(ctx, math.MaxUint64); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("RaiseFloor(2^64-1) = %v, want ErrInvalidConfig (beyond a Redis integer)", err)
	}
}

// WithMinToken raises the floor at the first Open: the first token is above it. (The
// minimum is above the server's clock in µs, which seeds a missing counter.)
func TestWithMinToken(t *testing.T) {
	const min = 1 << 60
	n := newNamespace(t, redislock.WithMinToken(min))
	ctx := ctxT(t, 10*locktest.NetworkTTL)
	c := lockclient.New(n.Backend("a"), lockclient.WithTTL(locktest.NetworkTTL))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() != min+1 {
		t.Fatalf("first token %d, want %d", l.Token(), uint64(min+1))
	}
	bad := redislock.New(n.client("b"), redislock.WithMinToken(math.MaxUint64))
	if err := bad.CheckConfig(); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("CheckConfig with WithMinToken(2^64-1) = %v, want ErrInvalidConfig", err)
	}
}
