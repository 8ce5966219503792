// The suite's tests of the basic lock contract, from a held key to mutual exclusion.

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
