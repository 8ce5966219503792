package lockclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// A machine suspended (or a VM paused) past the TTL: Go's monotonic clock did not count
// the suspended hour, the wall clock did. The lease must be lost at its local deadline
// on either clock: Err refuses it at once (what fencedsql checks before every
// statement), and the watchdog closes Lost (red-team rt42e F3).
func TestLeaseLostWhenWallClockPassesDeadline(t *testing.T) {
	svc := memlock.New()
	c := lockclient.New(svc, lockclient.WithOwner("a"), lockclient.WithTTL(10*time.Second))
	t.Cleanup(func() { c.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("a fresh lease: Err = %v", err)
	}
	lockclient.SetWall(c, func() time.Time { return time.Now().Add(time.Hour).Round(0) })
	if err := l.Err(); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Err after an hour the monotonic clock did not count = %v, want ErrLeaseLost", err)
	}
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost not closed")
	}
}

// The watchdog alone (no Err call) declares the lease lost when the wall clock passes
// its deadline: a holder woken from a suspend finds Lost closed.
func TestWatchdogLosesLeaseOnWallClock(t *testing.T) {
	svc := memlock.New()
	c := lockclient.New(svc, lockclient.WithOwner("a"), lockclient.WithTTL(2*time.Second))
	t.Cleanup(func() { c.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	lockclient.SetWall(c, func() time.Time { return time.Now().Add(time.Hour).Round(0) })
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog did not declare the lease lost at its wall-clock deadline")
	}
}
