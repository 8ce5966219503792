package locktest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// RunFloor checks a backend's token floor (lockclient.FloorRaiser) as subtests of t.
// Every Backend that h's namespaces return must implement lockclient.FloorRaiser; the
// suite fails at once otherwise. It needs no faults and uses h.New and h.TTL only, so
// the Harness of Run serves as is:
//
//	func TestFloor(t *testing.T) {
//		locktest.RunFloor(t, locktest.Harness{New: func(t *testing.T) locktest.Namespace {
//			return locktest.Shared{B: mybackend.New(...)}
//		}})
//	}
//
// Its checks, each on a fresh namespace:
//   - RaiseFloor(F) above the last token: every later grant (a new key, a key granted
//     again, a waiter handed the key) has a token above F, and LastToken is at least F;
//   - RaiseFloor at or below LastToken changes nothing: LastToken does not go down, nor
//     jump by anything like the min given, and tokens keep increasing;
//   - LastToken bounds grants: a token granted between two calls is above the first
//     answer and at most the second;
//   - RaiseFloor concurrent with grants: tokens of one key, taken in turns by several
//     clients while another raises the floor again and again, strictly increase in grant
//     order, and a grant requested after a raise returned is above that raise's min;
//   - for a backend that implements lockclient.Retirer (skipped otherwise): after Retire
//     no grant takes effect (ErrRetired), for a waiter queued before either, RaiseFloor
//     fails, and LastToken and a second Retire answer Retire's bound.
//
// A namespace may share its service's token counter with other namespaces (etcd: one
// revision for the whole cluster): the checks allow other activity to move tokens up, by
// less than a million during one check.
func RunFloor(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"RaiseFloorLiftsLaterGrants", testRaiseFloor},
		{"LowerRaiseChangesNothing", testLowerRaise},
		{"LastTokenBoundsGrants", testLastTokenBounds},
		{"RaiseConcurrentWithGrants", testRaiseConcurrent},
		{"RetireRefusesLaterGrants", testRetire},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

// noise bounds how far other activity on a shared service may move tokens during one
// check; the floor jumps are far larger.
const noise = 1_000_000

// floorOf returns the FloorRaiser of the backend of a client named owner, failing the test if there is none.
func (e *env) floorOf(owner string) lockclient.FloorRaiser {
	e.t.Helper()
	b := e.ns.Backend(owner)
	f, ok := b.(lockclient.FloorRaiser)
	if !ok {
		e.t.Fatalf("locktest: the backend %T does not implement lockclient.FloorRaiser", b)
	}
	return f
}

func lastToken(t *testing.T, ctx context.Context, f lockclient.FloorRaiser) uint64 {
	t.Helper()
	n, err := f.LastToken(ctx)
	if err != nil {
		t.Fatalf("LastToken: %v", err)
	}
	return n
}

func raise(t *testing.T, ctx context.Context, f lockclient.FloorRaiser, min uint64) {
	t.Helper()
	if err := f.RaiseFloor(ctx, min); err != nil {
		t.Fatalf("RaiseFloor(%d): %v", min, err)
	}
}

// Grant takes key with c and releases it, returning its token; the test fails if
// either call does.
func Grant(t *testing.T, ctx context.Context, c *lockclient.Client, key string) uint64 {
	t.Helper()
	l, err := c.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire %s: %v", key, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release %s: %v", key, err)
	}
	return l.Token()
}

func testRaiseFloor(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ctx := ctxT(t, 60*time.Second)
	a, b := e.client(), e.client()
	f := e.floorOf("floor-admin")
	before := Grant(t, ctx, a, "k")
	floor := lastToken(t, ctx, f) + 1000*noise
	raise(t, ctx, f, floor)
	if got := lastToken(t, ctx, f); got < floor {
		t.Fatalf("LastToken %d after RaiseFloor(%d), want at least the floor", got, floor)
	}
	tokens := map[string]uint64{"the key granted again": Grant(t, ctx, a, "k"), "a new key": Grant(t, ctx, b, "other")}
	// A waiter handed the key by its holder.
	l, err := a.Acquire(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *lockclient.Lease, 1)
	go func() {
		lw, err := b.Acquire(ctx, "q")
		if err != nil {
			t.Error(err)
		}
		got <- lw
	}()
	time.Sleep(h.arrivalGap())
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lw := <-got
	if lw == nil {
		return
	}
	tokens["a waiter handed the key"] = lw.Token()
	tokens["the holder before the waiter"] = l.Token()
	lw.Release(ctx)
	for what, tok := range tokens {
		if tok <= floor {
			t.Errorf("%s: token %d after RaiseFloor(%d) (token before the raise: %d)", what, tok, floor, before)
		}
	}
}

func testLowerRaise(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ctx := ctxT(t, 60*time.Second)
	a := e.client()
	f := e.floorOf("floor-admin")
	floor := lastToken(t, ctx, f) + 1000*noise
	raise(t, ctx, f, floor)
	prev := Grant(t, ctx, a, "k")
	for _, min := range []uint64{0, 1, floor - 10*noise, floor, prev} {
		before := lastToken(t, ctx, f)
		raise(t, ctx, f, min)
		after := lastToken(t, ctx, f)
		if after < before || after-before > noise {
			t.Fatalf("RaiseFloor(%d) at or below LastToken %d moved LastToken to %d", min, before, after)
		}
		tok := Grant(t, ctx, a, "k")
		if tok <= prev || tok-prev > noise {
			t.Fatalf("after RaiseFloor(%d) (a no-op) the token went from %d to %d", min, prev, tok)
		}
		prev = tok
	}
}

func testLastTokenBounds(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ctx := ctxT(t, 60*time.Second)
	a := e.client()
	f := e.floorOf("floor-admin")
	for i := range 6 {
		if i == 3 {
			raise(t, ctx, f, lastToken(t, ctx, f)+10*noise)
		}
		before := lastToken(t, ctx, f)
		tok := Grant(t, ctx, a, fmt.Sprintf("k%d", i%2))
		after := lastToken(t, ctx, f)
		if tok <= before || tok > after {
			t.Fatalf("grant %d: token %d, LastToken %d before and %d after: want before < token <= after", i, tok, before, after)
		}
	}
}

func testRaiseConcurrent(t *testing.T, h Harness) {
	e := newEnv(t, h)
	ctx := ctxT(t, 60*time.Second)
	const clients, rounds, raises = 4, 8, 10
	cs := make([]*lockclient.Client, clients)
	for i := range cs {
		cs[i] = e.client()
	}
	f := e.floorOf("floor-admin")
	var (
		mu     sync.Mutex
		tokens []uint64      // one key's tokens in grant order: appended while held
		raised atomic.Uint64 // the min of the last RaiseFloor that returned
		wg     sync.WaitGroup
	)
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				floor := raised.Load()
				l, err := c.Acquire(ctx, "k")
				if err != nil {
					t.Error(err)
					return
				}
				if l.Token() <= floor {
					t.Errorf("token %d granted to a request sent after RaiseFloor(%d) returned", l.Token(), floor)
				}
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				if err := l.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range raises {
			last, err := f.LastToken(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			min := last + 10*noise
			if err := f.RaiseFloor(ctx, min); err != nil {
				t.Error(err)
				return
			}
			raised.Store(min)
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	<-done
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("grant %d of one key has token %d after %d (tokens in grant order: %v)", i, tokens[i], tokens[i-1], tokens)
		}
	}
	if len(tokens) != clients*rounds {
		t.Fatalf("%d grants, want %d", len(tokens), clients*rounds)
	}
}
