package redislock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// A retired Redis service that loses its keys (FLUSHALL: a restart without
// persistence, a flush, an eviction) seeds its counter from the server's clock again.
// Retire answers its last token plus lockclient.RetirementMargin, so the revived
// service's tokens stay below the new service, raised to that answer, and below the
// database floor raised from the new service; a failover hook still pointed at the old
// service (LastToken, AdvanceFloor with the default margin) answers below it too
// (red-team rt44c F2).
func TestRetiredServiceRevivedByFlushStaysBelowItsRetirement(t *testing.T) {
	addr := ownRedis(t) // a private server: FLUSHALL below
	ctx := ctxT(t, 20*time.Second)
	rdb := newClient(t, addr)
	old := redislock.New(rdb, redislock.WithPrefix("revival:"))
	oc := lockclient.New(old, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("old"))
	l, err := oc.Acquire(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	_ = oc.Close(ctx)
	last, err := old.Retire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last < l.Token()+lockclient.RetirementMargin {
		t.Fatalf("Retire answered %d, want at least the last token %d plus the margin %d", last, l.Token(), lockclient.RetirementMargin)
	}
	if again, err := old.Retire(ctx); err != nil || again != last {
		t.Fatalf("Retire again = %d, %v; want %d", again, err, last)
	}
	svc := memlock.New(memlock.WithMinToken(last)) // the new service
	nc := lockclient.New(svc, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("new"))
	defer func() { _ = nc.Close(ctx) }()
	nl, err := nc.Acquire(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	_ = nl.Release(ctx)
	newLast, _ := svc.LastToken(ctx)
	dbFloor := newLast + 1
	time.Sleep(20 * time.Millisecond)
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	straggler := redislock.New(newClient(t, addr), redislock.WithPrefix("revival:"))
	sc := lockclient.New(straggler, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("straggler"))
	defer func() { _ = sc.Close(ctx) }()
	sl, err := sc.Acquire(ctx, "acct")
	switch {
	case errors.Is(err, lockclient.ErrRetired):
	case err != nil:
		t.Fatal(err)
	default:
		defer func() { _ = sl.Release(ctx) }()
		if sl.Token() >= dbFloor || sl.Token() >= nl.Token() {
			t.Fatalf("the revived service granted %d: the new service granted %d, the database floor is %d", sl.Token(), nl.Token(), dbFloor)
		}
	}
	hook, err := lockclient.AdvanceFloor(ctx, straggler, lockclient.DefaultFailoverMargin)
	if err != nil {
		t.Fatal(err)
	}
	if hook >= nl.Token() {
		t.Fatalf("a failover hook pointed at the revived service answers %d, above the new service's token %d", hook, nl.Token())
	}
}

// A Redis service raised with WithMinToken (as the service replacing a retired one is,
// to the retirement's bound, far above the server's clock) that loses its counter seeds
// it above its floor, not at the clock: its tokens do not go back below the ones it
// granted after the raise (red-team rt44c F2).
func TestLostCounterSeedsAboveWithMinToken(t *testing.T) {
	addr := ownRedis(t)
	ctx := ctxT(t, 20*time.Second)
	rdb := newClient(t, addr)
	floor := uint64(1) << 55 // far above the clock in µs
	b := redislock.New(rdb, redislock.WithPrefix("seedmin:"), redislock.WithMinToken(floor))
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("o"))
	defer func() { _ = c.Close(ctx) }()
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l2, err := c.Acquire(ctx, "other") // the Backend's floor was applied already: the grant seeds
	if err != nil {
		t.Fatal(err)
	}
	_ = l2.Release(ctx)
	if l2.Token() <= floor {
		t.Fatalf("after losing its counter the service granted %d, not above its floor %d", l2.Token(), floor)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if last, err := b.LastToken(ctx); err != nil || last < floor {
		t.Fatalf("LastToken after losing the counter = %d, %v; want at least the floor %d", last, err, floor)
	}
}
