package locktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// SessionHarness describes a backend for the session-level suite (RunSession), which
// checks the answers of lockclient.Session itself and what the Client makes of them.
// Fields other than New describe where the Session contract lets backends differ.
type SessionHarness struct {
	// New returns a fresh, empty lock namespace for one test. The suite does not inject
	// faults.
	New func(t *testing.T) Namespace
	// TTL is the session TTL of the expiry tests (default 300ms). Use the shortest TTL
	// the service honours exactly.
	TTL time.Duration
	// ExpiryDelay is how long after TTL the service has surely expired a grant that was
	// not renewed, and deleted it if it deletes expired grants (default 50ms).
	ExpiryDelay time.Duration
	// SecondRelease is the answer to a second Release of a released grant: the contract
	// allows lockclient.ErrLeaseLost (the default: the key is gone) or
	// lockclient.ErrNotOwner (the service holds nothing for this session and token).
	SecondRelease error
	// ForeignGrant returns the grant another session would present for g: g's key and
	// token without g's private data, or a forged copy of that data. Renew must refuse
	// it with ErrLeaseLost and Release with ErrNotOwner. Nil skips the check (a backend
	// whose grants are capabilities: whoever presents one acts for its session).
	ForeignGrant func(g lockclient.Grant) lockclient.Grant
	// ServerClock returns the means to read and move the service's own judgement of
	// expiry in namespace ns (see ServerClock). Required.
	ServerClock func(t *testing.T, ns Namespace) ServerClock
}

// ServerClock reads and moves the expiry of a grant as the lock service judges it.
type ServerClock interface {
	// CheckExpiry checks that the service recorded the grant of l (the lock key) to
	// expire about ttl after its own now (the client never sends a time).
	CheckExpiry(t *testing.T, key string, l *lockclient.Lease, ttl time.Duration)
	// Expire makes the service consider the grant of key expired, as its clock would
	// after the TTL; the client's own clock says nothing of it.
	Expire(t *testing.T, key string)
}

func (h SessionHarness) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return 300 * time.Millisecond
}

func (h SessionHarness) expired() time.Duration {
	if h.ExpiryDelay > 0 {
		return h.ttl() + h.ExpiryDelay
	}
	return h.ttl() + 50*time.Millisecond
}

func (h SessionHarness) secondRelease() error {
	if h.SecondRelease != nil {
		return h.SecondRelease
	}
	return lockclient.ErrLeaseLost
}

// RunSession runs the session-level suite as subtests of t.
func RunSession(t *testing.T, h SessionHarness) {
	tests := []struct {
		name string
		fn   func(*testing.T, SessionHarness)
	}{
		{"SessionAnswers", testSessionAnswers},
		{"TokensIncreaseAcrossKeysUnderConcurrency", testTokensUnderConcurrency},
		{"ExpiryIsJudgedByServerClock", testExpiryByServerClock},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// OpenSession opens a session of b for owner, closed at the end of the test.
func OpenSession(t testing.TB, b lockclient.Backend, owner string, ttl time.Duration) lockclient.Session {
	t.Helper()
	s, err := b.Open(context.Background(), owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// The Session contract's answers, one by one, including the cases lockclient folds
// together (ErrLeaseLost vs ErrNotOwner): renew and release after release, after expiry,
// and after another session took the key over.
func testSessionAnswers(t *testing.T, h SessionHarness) {
	n := h.New(t)
	ctx := ctxT(t, 30*time.Second)
	ttl := h.ttl()
	a := OpenSession(t, n.Backend("a"), "a", ttl)
	b := OpenSession(t, n.Backend("b"), "b", ttl)

	ga, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("same session TryAcquire = %v, want ErrHeld", err)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("other session TryAcquire = %v, want ErrHeld", err)
	}
	if err := a.Renew(ctx, ga); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if h.ForeignGrant != nil {
		// Another session holding a grant value that is not its own (or a forged one).
		forged := h.ForeignGrant(ga)
		if err := b.Renew(ctx, forged); !errors.Is(err, lockclient.ErrLeaseLost) {
			t.Fatalf("Renew of a foreign grant = %v, want ErrLeaseLost", err)
		}
		if err := b.Release(ctx, forged); !errors.Is(err, lockclient.ErrNotOwner) {
			t.Fatalf("Release of a foreign grant = %v, want ErrNotOwner", err)
		}
	}
	if err := a.Release(ctx, ga); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, h.secondRelease()) {
		t.Fatalf("second Release = %v, want %v", err, h.secondRelease())
	}

	// Expired and not retaken: Renew refuses, Release reports ErrLeaseLost.
	ga, err = a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(h.expired())
	if err := a.Renew(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Renew after expiry = %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Release after expiry = %v, want ErrLeaseLost", err)
	}

	// Expired and retaken: the stale holder can neither renew nor release.
	ga, err = a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(h.expired())
	gb, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire of an expired key: %v", err)
	}
	if gb.Token <= ga.Token {
		t.Fatalf("takeover token %d <= %d", gb.Token, ga.Token)
	}
	if err := a.Renew(ctx, ga); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("stale Renew = %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, ga); !errors.Is(err, lockclient.ErrNotOwner) {
		t.Fatalf("stale Release = %v, want ErrNotOwner", err)
	}
	if err := b.Renew(ctx, gb); err != nil {
		t.Fatalf("new holder's Renew after the stale Release: %v", err)
	}
	if err := b.Release(ctx, gb); err != nil {
		t.Fatal(err)
	}
}

// Tokens come from one counter: under concurrency on several keys every token is
// distinct, a grant that starts after another one completed has a larger token, and the
// grants of one key are ordered like their tokens.
func testTokensUnderConcurrency(t *testing.T, h SessionHarness) {
	n := h.New(t)
	type rec struct {
		key               string
		token             uint64
		start, end        time.Time // Acquire called, returned
		relStart, relDone time.Time
	}
	const workers, rounds, keys = 8, 15, 3
	var mu sync.Mutex
	var recs []rec
	ctx := ctxT(t, 60*time.Second)
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprintf("w%d", w)
		c := lockclient.New(n.Backend(owner), lockclient.WithTTL(10*time.Second), lockclient.WithOwner(owner),
			lockclient.WithRetry(2*time.Millisecond, 20*time.Millisecond))
		t.Cleanup(func() { c.Close(context.Background()) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				key := fmt.Sprintf("key-%d", (w+i)%keys)
				if rand.N(4) == 0 {
					key = fmt.Sprintf("own-%d-%d", w, i) // uncontended keys too
				}
				r := rec{key: key, start: time.Now()}
				l, err := c.Acquire(ctx, key)
				r.end = time.Now()
				if err != nil {
					t.Errorf("Acquire %s: %v", key, err)
					return
				}
				r.token = l.Token()
				r.relStart = time.Now()
				if err := l.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
				r.relDone = time.Now()
				mu.Lock()
				recs = append(recs, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[uint64]bool{}
	byKey := map[string][]rec{}
	for _, r := range recs {
		if seen[r.token] {
			t.Fatalf("token %d issued twice", r.token)
		}
		seen[r.token] = true
		byKey[r.key] = append(byKey[r.key], r)
	}
	for _, a := range recs {
		for _, b := range recs {
			if a.end.Before(b.start) && a.token >= b.token {
				t.Fatalf("grant of %s (token %d) completed before grant of %s (token %d) started", a.key, a.token, b.key, b.token)
			}
		}
	}
	for key, rs := range byKey {
		for _, a := range rs {
			for _, b := range rs {
				// b's grant can take effect only after a's release (nothing expires here),
				// so if tokens order a before b, a's release started before b was granted.
				if a.token < b.token && !a.relStart.Before(b.end) {
					t.Fatalf("key %s: token %d granted (at %v) before token %d was released (at %v)",
						key, b.token, b.end, a.token, a.relStart)
				}
			}
		}
	}
	t.Logf("%d grants, %d keys, tokens all distinct and ordered", len(recs), len(byKey))
}

// Expiry is the service's: the client sends the TTL as a duration, never a time, and a
// grant the service considers expired is expired, whatever the client's clock says. The
// holder is told at its next renewal, long before its own deadline, and another client
// takes the lock.
func testExpiryByServerClock(t *testing.T, h SessionHarness) {
	if h.ServerClock == nil {
		t.Fatal("locktest: the session harness has no ServerClock")
	}
	n := h.New(t)
	clock := h.ServerClock(t, n)
	ctx := ctxT(t, 30*time.Second)
	ttl := 30 * time.Second // the client's own deadline is far away
	a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl),
		lockclient.WithRenewInterval(50*time.Millisecond))
	defer a.Close(context.Background())
	b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
	defer b.Close(context.Background())

	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire = %v, want ErrHeld", err)
	}
	clock.CheckExpiry(t, "k", la, ttl)
	clock.Expire(t, "k")
	select {
	case <-la.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("holder not told its lease was lost after the server expired it")
	}
	if !errors.Is(la.Err(), lockclient.ErrLeaseLost) {
		t.Fatalf("Err = %v", la.Err())
	}
	if left := time.Until(la.Deadline()); left < 20*time.Second {
		t.Fatalf("lost only near its local deadline (%v before it)", left)
	}
	lb, err := b.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("TryAcquire after the server expired the grant: %v", err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("tokens %d then %d", la.Token(), lb.Token())
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
