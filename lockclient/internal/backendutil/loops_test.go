package backendutil

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWaitFreeSleepsNoLongerThanTheLease(t *testing.T) {
	ctx := context.Background()
	checks := 0
	start := time.Now()
	err := WaitFree(ctx, func() time.Duration { return time.Hour }, func(context.Context) (bool, time.Duration, error) {
		checks++
		return checks == 3, 10 * time.Millisecond, nil
	})
	if err != nil || checks != 3 {
		t.Fatalf("WaitFree = %v after %d checks, want nil after 3", err, checks)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("WaitFree slept %v: the remaining lease (10ms) did not bound the poll (1h)", d)
	}
}

func TestWaitFreeErrors(t *testing.T) {
	boom := errors.New("boom")
	err := WaitFree(context.Background(), func() time.Duration { return time.Millisecond }, func(context.Context) (bool, time.Duration, error) {
		return false, 0, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WaitFree = %v, want the check's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = WaitFree(ctx, func() time.Duration { return time.Hour }, func(context.Context) (bool, time.Duration, error) {
		cancel()
		return false, 0, boom // failed because the context ended
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFree after cancel = %v, want context.Canceled", err)
	}
}

func TestRetry(t *testing.T) {
	n := 0
	Retry(context.Background(), time.Second, time.Millisecond, 2*time.Millisecond, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("attempt without its own deadline")
		}
		n++
		if n < 4 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 4 {
		t.Fatalf("Retry made %d attempts, want 4 (until success)", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n = 0
	Retry(ctx, time.Second, time.Millisecond, 5*time.Millisecond, func(context.Context) error { n++; return errors.New("never") })
	if ctx.Err() == nil || n < 2 {
		t.Fatalf("Retry returned before its context ended (%d attempts)", n)
	}
}
