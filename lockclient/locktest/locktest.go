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
	"fmt"
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
	// reached the service's queue (default TTL/8). A Namespace that implements
	// QueueCounter is asked instead, which no load can outrun.
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
