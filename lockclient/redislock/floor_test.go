package redislock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

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

// WithMinToken raises the floor at the first Open: the first token is above it — at the
// server's clock in µs plus the minimum, the seed rule's offset (red-team rt45d F1).
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
	if l.Token() <= min+1_000_000_000_000_000 { // the seed rule: the clock in µs (above 10^15 since 2001) plus min
		t.Fatalf("first token %d, want the server's clock in µs plus %d", l.Token(), uint64(min))
	}
	bad := redislock.New(n.client("b"), redislock.WithMinToken(math.MaxUint64))
	if err := bad.CheckConfig(); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("CheckConfig with WithMinToken(2^64-1) = %v, want ErrInvalidConfig", err)
	}
}

// A token counter at its end (2^63−1, reached after a raise to the highest floor,
// 2^63−2, and one grant) is a configuration error: the next grant fails at once with an
// error wrapping lockclient.ErrInvalidConfig that names the counter, never ErrUnavailable
// retried until the deadline (G14, as sqllock's exhausted token source).
func TestExhaustedCounterIsConfigError(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 20*time.Second)
	b := n.backend("a")
	if err := b.RaiseFloor(ctx, math.MaxInt64-1); err != nil {
		t.Fatalf("RaiseFloor(2^63-2), documented as the highest floor: %v", err)
	}
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if l.Token() != math.MaxInt64 {
		t.Fatalf("token %d, want 2^63-1", l.Token())
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Acquire(actx, "k")
	if err == nil {
		t.Fatal("a grant after 2^63-1 succeeded")
	}
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) || !strings.Contains(err.Error(), b.TokenKey()) {
		t.Fatalf("Acquire with the token counter at its end = %v after %v; want an error wrapping ErrInvalidConfig naming the counter, at once, not ErrUnavailable retried until the deadline",
			err, time.Since(start).Round(time.Millisecond))
	}
}
