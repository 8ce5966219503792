// The suite's fault tests: a stalled holder's lost lease, and an unreachable service that is not ErrHeld.

package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// lostBeforeRegrant checks that the client gives up before the service expires the lease
// (G7 in docs/design.md): the faulty holder declares its lease lost before the
// service grants the key to another client.
func lostBeforeRegrant(t *testing.T, h Harness, inject, undo func(Faults, string)) {
	e := newEnv(t, h)
	f := e.faults()
	a, b := e.client(), e.client()
	ctx := ctxT(t, 20*time.Second)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(e.h.ttl() / 2) // at least one renewal went through
	inject(f, a.Owner())
	defer undo(f, a.Owner())
	lb, err := b.Acquire(ctx, "k")
	grantedAt := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(ctx)
	// The holder trusts its lease until its local deadline: that must be before the
	// regrant. (Judged by the deadline, not by when the watchdog got to close Lost, so
	// that a starved test process cannot fail a correct client.)
	if d := la.Deadline(); !d.Before(grantedAt) {
		t.Fatalf("holder trusted its lease until %v, after the regrant at %v (%v late)", d, grantedAt, d.Sub(grantedAt))
	}
	select {
	case <-la.Lost():
	case <-time.After(2 * e.h.ttl()):
		t.Fatalf("Lost not closed %v after the regrant", 2*e.h.ttl())
	}
	if !errors.Is(la.Err(), lockclient.ErrLeaseLost) {
		t.Fatalf("Err = %v, want ErrLeaseLost", la.Err())
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("new token %d <= old %d", lb.Token(), la.Token())
	}
}

func testPausedHolder(t *testing.T, h Harness) {
	lostBeforeRegrant(t, h, Faults.Pause, Faults.Resume)
}

func testPartitionedHolder(t *testing.T, h Harness) {
	lostBeforeRegrant(t, h, Faults.Partition, Faults.Heal)
}

func testUnavailableIsNotHeld(t *testing.T, h Harness) {
	e := newEnv(t, h)
	f := e.faults()
	a := e.client()
	ctx := ctxT(t, 10*time.Second)
	// Open the session first, then cut the client off.
	l, err := a.Acquire(ctx, "warmup")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	f.Partition(a.Owner())
	defer f.Heal(a.Owner())
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = a.TryAcquire(short, "free-key")
	if !errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire through a partition = %v, want ErrUnavailable and not ErrHeld", err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	_, err = a.Acquire(short2, "free-key")
	if !errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("Acquire through a partition = %v, want ErrUnavailable and not ErrHeld", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire through a partition = %v, want it to wrap the context error", err)
	}
}
