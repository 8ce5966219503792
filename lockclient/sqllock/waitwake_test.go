// How waiters learn of a release: NOTIFY or polling without a busy loop, and a listener that recovers.

package sqllock_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// On PostgreSQL a release wakes the first waiter through NOTIFY, long before any poll
// would; on MySQL the first waiter polls within the poll interval (backing off while the
// holder keeps the key). Either way a waiter does not busy-loop while the holder keeps
// renewing.
func TestWaitWakesOnReleaseWithoutBusyLoop(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		pollMin, pollMax := 20*time.Millisecond, 200*time.Millisecond
		if srv.dialect == sqllock.Postgres {
			pollMin, pollMax = 2*time.Second, 2*time.Second // a poll could not be that fast
		}
		n := newNamespace(t, srv, sqllock.WithPollInterval(pollMin, pollMax))
		ctx := ctxT(t, 30*time.Second)
		ttl := 5 * time.Second
		a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
		defer a.Close(context.Background())
		b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
		defer b.Close(context.Background())
		la, err := a.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		checks := 0
		restore := sqllock.SetStatementHook(func(q string, args []any) {
			if strings.Contains(q, "_grant_v2") { // a waiter's call: join, refresh, try
				mu.Lock()
				checks++
				mu.Unlock()
			}
		})
		defer restore()
		got := make(chan *lockclient.Lease, 1)
		go func() {
			lb, err := b.Acquire(ctx, "k")
			if err != nil {
				t.Errorf("Acquire: %v", err)
			}
			got <- lb
		}()
		hold := 1500 * time.Millisecond
		time.Sleep(hold) // a renews meanwhile
		mu.Lock()
		c := checks
		mu.Unlock()
		// MySQL: one check per poll (20–200ms) → at most hold/20ms; PostgreSQL: LISTEN,
		// re-checking every TTL/4 → a handful.
		maxChecks := int(hold/pollMin) + 2
		if srv.dialect == sqllock.Postgres {
			maxChecks = 4
		}
		if c < 1 || c > maxChecks {
			t.Fatalf("waiter made %d checks in %v, want 1..%d", c, hold, maxChecks)
		}
		released := time.Now()
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case lb := <-got:
			d := time.Since(released)
			t.Logf("%d checks while held for %v; granted %v after the release", c, hold, d)
			if limit := pollMax + 800*time.Millisecond; srv.dialect == sqllock.MySQL && d > limit {
				t.Fatalf("waiter granted %v after the release, poll max is %v", d, pollMax)
			}
			if srv.dialect == sqllock.Postgres && d > time.Second {
				t.Fatalf("waiter granted %v after the release: not woken by NOTIFY", d)
			}
			if lb != nil {
				lb.Release(ctx)
			}
		case <-ctx.Done():
			t.Fatal("waiter not granted")
		}
	})
}

// PostgreSQL: when the listening connection breaks, waiters fall back to polling and the
// listener comes back, so a later release is again noticed through NOTIFY.
func TestListenerRecovers(t *testing.T) {
	// Polls every minute: a waiter granted within seconds of the release was woken by
	// NOTIFY (a bound that is generous for a loaded machine and far from the poll).
	n := newNamespace(t, servers[0], sqllock.WithPollInterval(time.Minute, time.Minute))
	ctx := ctxT(t, 30*time.Second)
	ttl := 20 * time.Second
	a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
	defer a.Close(context.Background())
	// After the reset, b's other pooled connections fail once each: retry those quickly.
	b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl),
		lockclient.WithRetry(5*time.Millisecond, 20*time.Millisecond))
	defer b.Close(context.Background())
	for round := range 2 {
		la, err := a.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			lb, err := b.Acquire(ctx, "k")
			if err == nil {
				err = lb.Release(ctx)
			}
			got <- err
		}()
		time.Sleep(500 * time.Millisecond)
		if round == 0 {
			n.Reset("b") // drops the listening connection (and any other of b's)
			time.Sleep(2 * time.Second)
		}
		released := time.Now()
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("round %d: waiter granted %v after the release", round, time.Since(released))
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: waiter not granted within 5s of the release: NOTIFY did not wake it (it polls every minute)", round)
		}
	}
}
