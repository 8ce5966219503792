package memlock_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestNoTokenPastMaxInt64 (red-team rt28b F3): memlock accepts the highest floor, 2^63−2, grants
// 2^63−1, and then keeps counting: the next grant carries token 2^63, which no guarded
// database can store (fencedsql refuses it at every write with NoTokenError "token
// exceeds the largest BIGINT"), and after 2^64−1 the uint64 counter would wrap to 0. The
// Client reports a healthy lease whose every write is refused.
//
// Right behaviour (as redislock's TestExhaustedCounterIsConfigError and sqllock's
// exhausted token source): a grant that finds the counter at 2^63−1 fails at once with
// an error wrapping lockclient.ErrInvalidConfig, never a token above MaxInt64 (the
// package doc itself says the floor bound makes the counter "never wrap").
func TestNoTokenPastMaxInt64(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	svc := memlock.New()
	if err := svc.RaiseFloor(ctx, math.MaxInt64-1); err != nil {
		t.Fatalf("RaiseFloor(2^63-2), the documented highest floor: %v", err)
	}
	c := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer c.Close(ctx)
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
	actx, acancel := context.WithTimeout(ctx, time.Second)
	defer acancel()
	l2, err := c.Acquire(actx, "k")
	if err == nil {
		defer l2.Release(ctx)
		t.Fatalf("a grant after 2^63-1 succeeded with token %d (above the largest BIGINT); want an error wrapping ErrInvalidConfig", l2.Token())
	}
	if !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("Acquire with the counter at its end = %v; want ErrInvalidConfig", err)
	}
}

// TestQueuedWaiterAtTokenEnd: a waiter in a key's queue when the holder of the last
// token (2^63−1) releases is not handed a token past it: its AcquireQueued fails with
// ErrInvalidConfig at the handoff, at once.
func TestQueuedWaiterAtTokenEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	svc := memlock.New()
	if err := svc.RaiseFloor(ctx, math.MaxInt64-1); err != nil {
		t.Fatal(err)
	}
	holder := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer holder.Close(ctx)
	l, err := holder.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	waiter := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer waiter.Close(ctx)
	res := make(chan error, 1)
	go func() {
		l2, err := waiter.Acquire(ctx, "k")
		if err == nil {
			l2.Release(ctx)
		}
		res <- err
	}()
	time.Sleep(50 * time.Millisecond) // the waiter queues
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-res:
		if !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("queued Acquire at the counter's end = %v; want ErrInvalidConfig", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the queued Acquire did not end at the handoff")
	}
}
