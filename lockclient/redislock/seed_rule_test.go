package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// The seed rule (red-team rt45d F1–F3): a lost counter is seeded at the server's clock
// plus the service's offset (WithMinToken), never inside the range the service granted.

// minTokenClient is a Client of a Backend of n configured with WithMinToken(m).
func minTokenClient(t *testing.T, n *namespace, owner string, m uint64) (*redislock.Backend, *lockclient.Client) {
	t.Helper()
	b := redislock.New(n.client(owner), redislock.WithPrefix(n.prefix), redislock.WithMinToken(m))
	c := lockclient.New(b, lockclient.WithTTL(10*time.Second), lockclient.WithOwner(owner))
	t.Cleanup(func() { c.Close(context.Background()) })
	return b, c
}

// acquireAll acquires every key with c and returns the last lease (held).
func acquireAll(t *testing.T, ctx context.Context, c *lockclient.Client, keys ...string) *lockclient.Lease {
	t.Helper()
	var l *lockclient.Lease
	for _, k := range keys {
		var err error
		if l, err = c.Acquire(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// F1: a service raised with WithMinToken far above the clock (the service switched to)
// that loses its counter grants above every token it granted before the loss — before
// the fix it seeded at WithMinToken+1 and granted those tokens again, above the
// database's floor, so a stale holder outranked the new one.
func TestLostCounterReseededAboveTokensIssued(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	const m = uint64(1) << 54
	_, a := minTokenClient(t, n, "a", m)
	stale := acquireAll(t, ctx, a, "x1", "x2", "account:7")
	deleteAll(t, ctx, admin, n.prefix) // Redis restarted without persistence
	_, b := minTokenClient(t, n, "b", m)
	fresh, err := b.Acquire(ctx, "account:7")
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Release(ctx)
	if fresh.Token() <= stale.Token() {
		t.Fatalf("after the lost counter the service granted %d, not above %d granted before the loss", fresh.Token(), stale.Token())
	}
	// A Backend already running (a's) seeds the same way: its next grant after another loss.
	deleteAll(t, ctx, admin, n.prefix)
	again, err := a.Acquire(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release(ctx)
	if again.Token() <= fresh.Token() {
		t.Fatalf("a running Backend re-seeded at %d, not above %d granted before the loss", again.Token(), fresh.Token())
	}
}

// F1 (LastToken form): after the loss, LastToken with WithMinToken bounds every token
// issued before it.
func TestLastTokenAfterLostCounterBoundsIssued(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	const m = uint64(1) << 54
	_, a := minTokenClient(t, n, "a", m)
	last := acquireAll(t, ctx, a, "x1", "x2", "x3")
	deleteAll(t, ctx, admin, n.prefix)
	nb := redislock.New(n.client("nb"), redislock.WithPrefix(n.prefix), redislock.WithMinToken(m))
	got, err := nb.LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got < last.Token() {
		t.Fatalf("LastToken after the lost counter = %d, below token %d granted before the loss", got, last.Token())
	}
}

// F2: Backend.Retire on a lost counter seeds by the Backend's WithMinToken (before, the
// clock alone: clock + 2^52, below the tokens the service granted above 2^60).
func TestRetireOnLostCounterUsesWithMinToken(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	const m = uint64(1) << 60
	be, a := minTokenClient(t, n, "a", m)
	l := acquireAll(t, ctx, a, "k")
	deleteAll(t, ctx, admin, n.prefix)
	last, err := be.Retire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < l.Token()+lockclient.RetirementMargin {
		t.Fatalf("Retire after the lost counter answered %d, want at least token %d + the margin", last, l.Token())
	}
}

// F2 (lockfloor form): Retire through a Backend without WithMinToken on a lost counter
// cannot bound what the service issued (it may have lain far above the clock: after
// two switches about 2^53): it fails with ErrUnavailable ("counter lost") and marks
// nothing, where it answered clock + 2^52 before.
func TestRetireOnLostCounterWithoutOffsetRefused(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	raised := serverMicros(t, ctx, admin) + 2*lockclient.RetirementMargin // Redis1 -> Redis2 -> this service
	svc := n.backend("svc")
	if err := svc.RaiseFloor(ctx, raised); err != nil { // lockfloor -raise, the switch
		t.Fatal(err)
	}
	c := lockclient.New(svc, lockclient.WithTTL(10*time.Second))
	defer c.Close(context.Background())
	acquireAll(t, ctx, c, "k")
	deleteAll(t, ctx, admin, n.prefix)
	tool := n.backend("lockfloor")
	last, err := tool.Retire(ctx)
	if !errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Retire on a lost counter without an offset = %d, %v; want ErrUnavailable (counter lost)", last, err)
	}
	if exists, _ := admin.Exists(ctx, svc.TokenKey()).Result(); exists != 0 {
		t.Fatal("the refused Retire wrote the counter")
	}
}

// F3: a lost counter seeded by a Backend without WithMinToken (lockfloor -show, a
// straggler) is adopted by the next grant of a Backend with WithMinToken(m): its tokens
// stay above m (and above the clock plus m), where it counted on from the clock before.
func TestSeedWithoutMinTokenAdoptedByMinToken(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	const m = uint64(1) << 54
	_, a := minTokenClient(t, n, "a", m)
	first := acquireAll(t, ctx, a, "k1")
	_ = first.Release(ctx)
	deleteAll(t, ctx, admin, n.prefix)
	if _, err := n.backend("show").LastToken(ctx); err != nil { // lockfloor -show after the restart
		t.Fatal(err)
	}
	l2 := acquireAll(t, ctx, a, "k2")
	defer l2.Release(ctx)
	if l2.Token() <= first.Token() {
		t.Fatalf("Backend with WithMinToken(%d) granted %d after the lost counter was seeded by a process without it (before the loss: %d)",
			m, l2.Token(), first.Token())
	}
}

// The class: every process of a service must seed a lost counter above the tokens it
// issued, so a Backend whose WithMinToken is below the offset another Backend recorded
// — none at all included — is refused (ErrInvalidConfig) while the counter lives,
// instead of seeding below after a loss; and a raise above the clock plus the service's
// offset is refused (a counter lost after it would be re-seeded below its tokens).
func TestWithMinTokenBelowServiceOffsetRefused(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	const m = uint64(1) << 54
	_, a := minTokenClient(t, n, "a", m)
	l := acquireAll(t, ctx, a, "k")
	defer l.Release(ctx)

	for _, low := range []uint64{0, m - 1} {
		var be *redislock.Backend
		if low == 0 {
			be = n.backend("plain")
		} else {
			be = redislock.New(n.client("low"), redislock.WithPrefix(n.prefix), redislock.WithMinToken(low))
		}
		c := lockclient.New(be, lockclient.WithTTL(10*time.Second))
		_, err := c.Acquire(ctx, "other")
		c.Close(context.Background())
		if !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Errorf("WithMinToken(%d) on a service recorded at offset %d: %v, want ErrInvalidConfig", low, m, err)
		}
	}

	now := serverMicros(t, ctx, admin)
	tool := n.backend("lockfloor")
	if err := tool.RaiseFloor(ctx, now+m+lockclient.RetirementMargin); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("a raise above the clock plus the service's offset = %v, want ErrInvalidConfig", err)
	}
	if err := tool.RaiseFloor(ctx, l.Token()+1000); err != nil {
		t.Fatalf("a raise below the clock plus the offset: %v", err)
	}
}

// The class: adopting a WithMinToken that does not bound the counter (a counter raised
// far above the clock by a tool, then a process configured with a lower WithMinToken)
// is refused (ErrInvalidConfig), where it recorded an offset that would seed a lost
// counter below the tokens issued.
func TestWithMinTokenNotBoundingCounterRefused(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 30*time.Second)
	admin := newClient(t, n.Target())
	raised := serverMicros(t, ctx, admin) + lockclient.RetirementMargin + 1<<50
	if err := n.backend("lockfloor").RaiseFloor(ctx, raised); err != nil {
		t.Fatal(err)
	}
	_, c := minTokenClient(t, n, "a", 1<<40)
	if _, err := c.Acquire(ctx, "k"); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("WithMinToken(2^40) on a counter raised to %d: %v, want ErrInvalidConfig", raised, err)
	}
	_, ok := minTokenClient(t, n, "b", raised)
	l, err := ok.Acquire(ctx, "k")
	if err != nil {
		t.Fatalf("WithMinToken(%d), the raised value: %v", raised, err)
	}
	defer l.Release(ctx)
	if l.Token() <= raised {
		t.Fatalf("token %d, want above the raise %d", l.Token(), raised)
	}
}
