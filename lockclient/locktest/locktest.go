// Package locktest is the conformance suite for lockclient backends. It runs the lock
// contract against any lockclient.Backend: the client gives up a lease before the
// service expires it (G7 in docs/design.md), release is owner- and token-checked (G8),
// and ErrHeld is never confused with ErrUnavailable. Every backend in this module runs
// it, and authors of their own Backend can run it too:
//
//	func TestConformance(t *testing.T) {
//		locktest.Run(t, locktest.Harness{New: func(t *testing.T) locktest.Namespace {
//			b := mybackend.New(...)
//			return locktest.Shared{B: b, F: myFaults(b)}
//		}})
//	}
//
// Each test would fail if the property it names broke. Timing-based tests use short TTLs
// scaled by Harness.TTL; choose a TTL that the backend can renew comfortably.
package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Faults injects per-client faults. The tests that need faults fail when a Namespace
// returns nil Faults: a conformant harness must be able to pause and partition one
// client (a loopback proxy in front of a networked service does it, see
// internal/netproxy).
type Faults interface {
	// Pause stops all traffic from the client named owner to the service, keeping its
	// requests until Resume (a stalled process).
	Pause(owner string)
	Resume(owner string)
	// Partition black-holes the client's traffic until Heal.
	Partition(owner string)
	Heal(owner string)
}

// Harness describes the backend under test.
type Harness struct {
	// New returns a fresh, empty lock namespace for one test.
	New func(t *testing.T) Namespace
	// TTL is the lease TTL the timing tests use (default 400ms).
	TTL time.Duration
	// FIFO declares that the backend serves the waiters of one key in arrival order
	// (G12): Run/FairHandoff then checks the order. Without it the test only checks that
	// every waiter is served; the backend's documentation must say what it promises.
	FIFO bool
	// ArrivalGap is how long after starting a waiting Acquire the waiter has surely
	// reached the service's queue (default TTL/8).
	ArrivalGap time.Duration
}

func (h Harness) arrivalGap() time.Duration {
	if h.ArrivalGap > 0 {
		return h.ArrivalGap
	}
	return h.ttl() / 8
}

// Namespace is one test's view of a lock service.
type Namespace interface {
	// Backend returns the backend a client named owner uses: for a networked service,
	// its own connection (through a proxy the Faults can cut), so that faults can
	// target one client.
	Backend(owner string) lockclient.Backend
	// Faults injects faults per owner, or returns nil when the harness cannot (the
	// tests that need faults then fail: every backend of this module injects them).
	Faults() Faults
}

// Shared is a Namespace in which every client uses the same Backend value, for
// in-process services like memlock.
type Shared struct {
	B lockclient.Backend
	F Faults
}

func (s Shared) Backend(string) lockclient.Backend { return s.B }
func (s Shared) Faults() Faults                    { return s.F }

// NetworkTTL is a Harness.TTL for a service behind a TCP proxy: long enough that
// renewals through the race detector, the proxy and a heavily loaded machine always make
// it. The suite's clients renew every TTL/6 with a safety margin of TTL/4, so a renewal
// has TTL·7/12 (1.17s) before the local deadline. 1s failed once in many runs (a renewal
// took over 400ms) at a load average of 10 on two CPUs; 2s with renewals every TTL/3
// (833ms to spare) failed once with two fuzz workers saturating both CPUs.
const NetworkTTL = 2 * time.Second

func (h Harness) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return 400 * time.Millisecond
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"TryAcquireHeld", testTryAcquireHeld},
		{"TokensIncreaseAcrossKeysAndRegrants", testTokensIncrease},
		{"AcquireWaitsForRelease", testAcquireWaitsForRelease},
		{"RenewedLeaseOutlivesTTL", testRenewedLeaseOutlivesTTL},
		{"ReleaseIsOwnerChecked", testReleaseOwnerChecked},
		{"AcquireCancelReturnsPromptly", testAcquireCancel},
		{"ConcurrentMutualExclusion", testMutualExclusion},
		{"PausedHolderLostBeforeRegrant", testPausedHolder},
		{"PartitionedHolderLostBeforeRegrant", testPartitionedHolder},
		{"UnavailableIsNotHeld", testUnavailableIsNotHeld},
		{"UnhealthyHolderLostBeforeExpiryAndKeyFreed", testUnhealthyHolder},
		{"LostLeaseKeyFreedWithoutRelease", testLostLeaseKeyFreed},
		{"CloseEndsWaitingAcquire", testCloseEndsWaiters},
		{"CancelledAttemptLeavesNoGrant", testCancelledTryAcquireLeavesNoGrant},
		{"FairHandoff", testFairHandoff},
		{"NoLostWakeupWhenWaiterCancels", testNoLostWakeup},
		{"TokensFollowGrantOrderAcrossKeys", testTokensFollowGrantOrder},
		{"ContentionNoStarvation", testContention},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

type env struct {
	t  *testing.T
	h  Harness
	ns Namespace
	n  int
}

func newEnv(t *testing.T, h Harness) *env {
	return &env{t: t, h: h, ns: h.New(t)}
}

// client returns a new client (a separate "process") whose owner is unique in the test.
func (e *env) client(opts ...lockclient.Option) *lockclient.Client {
	e.n++
	owner := fmt.Sprintf("%s-c%d", e.t.Name(), e.n)
	ttl := e.h.ttl()
	base := []lockclient.Option{
		lockclient.WithOwner(owner), lockclient.WithTTL(ttl),
		lockclient.WithSafetyMargin(ttl / 4), lockclient.WithRenewInterval(ttl / 6),
		lockclient.WithRetry(5*time.Millisecond, 50*time.Millisecond),
	}
	c := lockclient.New(e.ns.Backend(owner), append(base, opts...)...)
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

func (e *env) faults() Faults {
	f := e.ns.Faults()
	if f == nil {
		e.t.Fatal("locktest: the harness injects no faults; this test needs them")
	}
	return f
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func testTryAcquireHeld(t *testing.T, h Harness) {
	e := newEnv(t, h)
	a, b := e.client(), e.client()
	ctx := ctxT(t, 10*time.Second)
	la, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("first TryAcquire: %v", err)
	}
	_, err = b.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrHeld) || errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("TryAcquire of a held lock = %v, want ErrHeld and not ErrUnavailable", err)
	}
	// Not re-entrant, even for the same client.
	if _, err := a.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("same client TryAcquire of its own lock = %v, want ErrHeld", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case <-la.Lost():
	default:
		t.Fatal("Lost not closed after Release")
	}
	if !errors.Is(la.Err(), lockclient.ErrLeaseLost) {
		t.Fatalf("Err after Release = %v, want ErrLeaseLost", la.Err())
	}
	lb, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token after re-grant %d <= earlier %d", lb.Token(), la.Token())
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("second Release of a released lease = %v, want nil", err)
	}
	if _, err := a.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("double release freed the next holder's lock: TryAcquire = %v", err)
	}
}

func testTokensIncrease(t *testing.T, h Harness) {
	e := newEnv(t, h)
	clients := []*lockclient.Client{e.client(), e.client(), e.client()}
	ctx := ctxT(t, 20*time.Second)
	var last uint64
	for i := range 30 {
		c := clients[i%len(clients)]
		key := fmt.Sprintf("key-%d", i%4)
		l, err := c.Acquire(ctx, key)
		if err != nil {
			t.Fatalf("Acquire %s: %v", key, err)
		}
		if l.Token() <= last {
			t.Fatalf("grant %d of %s: token %d not greater than previous %d", i, key, l.Token(), last)
		}
		last = l.Token()
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	// Concurrent grants on distinct keys are all distinct.
	var mu sync.Mutex
	seen := map[uint64]bool{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := clients[i%3].Acquire(ctx, fmt.Sprintf("conc-%d", i))
			if err != nil {
				t.Errorf("Acquire: %v", err)
				return
			}
			defer l.Release(ctx)
			mu.Lock()
			defer mu.Unlock()
			if seen[l.Token()] || l.Token() <= last {
				t.Errorf("token %d repeated or not above %d", l.Token(), last)
			}
			seen[l.Token()] = true
		}()
	}
	wg.Wait()
}

func testAcquireWaitsForRelease(t *testing.T, h Harness) {
	e := newEnv(t, h)
	a, b := e.client(), e.client()
	ctx := ctxT(t, 10*time.Second)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lockclient.Lease, 1)
	go func() {
		lb, err := b.Acquire(ctx, "k")
		if err != nil {
			t.Errorf("waiting Acquire: %v", err)
		}
		got <- lb
	}()
	select {
	case <-got:
		t.Fatal("Acquire returned while the lock was held")
	case <-time.After(e.h.ttl() * 2): // held across renewals
	}
	released := time.Now()
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case lb := <-got:
		if lb == nil {
			return
		}
		if lb.Token() <= la.Token() {
			t.Fatalf("waiter token %d <= holder token %d", lb.Token(), la.Token())
		}
		if d := time.Since(released); d > e.h.ttl() {
			t.Errorf("waiter took %v after release", d)
		}
		lb.Release(ctx)
	case <-ctx.Done():
		t.Fatal("waiter not granted after release")
	}
}

func testRenewedLeaseOutlivesTTL(t *testing.T, h Harness) {
	e := newEnv(t, h)
	a, b := e.client(), e.client()
	ctx := ctxT(t, 20*time.Second)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(4 * e.h.ttl())
	for time.Now().Before(end) {
		select {
		case <-la.Lost():
			t.Fatalf("renewed lease lost: %v", la.Err())
		case <-time.After(e.h.ttl() / 4):
		}
		if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("after renewals another client TryAcquire = %v, want ErrHeld", err)
		}
	}
	if la.Err() != nil {
		t.Fatalf("Err of a held lease = %v", la.Err())
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func testReleaseOwnerChecked(t *testing.T, h Harness) {
	e := newEnv(t, h)
	f := e.faults()
	a, b, c := e.client(), e.client(), e.client()
	ctx := ctxT(t, 20*time.Second)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	f.Pause(a.Owner())
	lb, err := b.Acquire(ctx, "k") // granted after a's lease really expired
	if err != nil {
		t.Fatal(err)
	}
	f.Resume(a.Owner())
	err = la.Release(ctx)
	if !errors.Is(err, lockclient.ErrLeaseLost) && !errors.Is(err, lockclient.ErrNotOwner) {
		t.Fatalf("stale Release = %v, want ErrLeaseLost or ErrNotOwner", err)
	}
	if _, err := c.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("stale Release freed the new holder's lock: TryAcquire = %v", err)
	}
	select {
	case <-lb.Lost():
		t.Fatalf("new holder's lease lost: %v", lb.Err())
	default:
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func testAcquireCancel(t *testing.T, h Harness) {
	e := newEnv(t, h)
	a, b := e.client(), e.client()
	ctx := ctxT(t, 10*time.Second)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer la.Release(ctx)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.Acquire(cctx, "k")
		done <- err
	}()
	time.Sleep(e.h.ttl() / 2)
	cancel()
	start := time.Now()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Acquire = %v, want context.Canceled", err)
		}
		if errors.Is(err, lockclient.ErrHeld) && errors.Is(err, lockclient.ErrUnavailable) {
			t.Fatalf("cancelled Acquire mixes ErrHeld and ErrUnavailable: %v", err)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("cancelled Acquire took %v to return", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled Acquire did not return")
	}
	// An already-expired context fails without waiting.
	dead, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, err := b.Acquire(dead, "other"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with cancelled ctx = %v", err)
	}
}

func testMutualExclusion(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ctx := ctxT(t, 30*time.Second)
	var mu sync.Mutex
	holders, maxHolders, total := 0, 0, 0
	var last uint64
	var wg sync.WaitGroup
	for range 4 {
		c := e.client()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				l, err := c.Acquire(ctx, "mx")
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				mu.Lock()
				holders++
				total++
				maxHolders = max(maxHolders, holders)
				if l.Token() <= last {
					t.Errorf("token %d after %d", l.Token(), last)
				}
				last = l.Token()
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				holders--
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if maxHolders != 1 || total != 20 {
		t.Fatalf("max simultaneous holders %d (want 1), grants %d (want 20)", maxHolders, total)
	}
}

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
