package lockclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// ConfirmHeldSince renews once when no renewal sent after since was accepted, answers
// from that renewal afterwards with no round trip, and measures from since: a later
// since asks the service again (red-team rt45f F2).
func TestConfirmHeldSinceRenewsOnce(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New()
	c := lockclient.New(svc, lockclient.WithTTL(time.Minute))
	t.Cleanup(func() { _ = c.Close(ctx) })
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now()
	before := svc.Renewals()
	for range 2 {
		if err := l.ConfirmHeldSince(ctx, since); err != nil {
			t.Fatal(err)
		}
	}
	if n := svc.Renewals() - before; n != 1 {
		t.Errorf("two confirmations since one time: %d renewals, want 1", n)
	}
	if err := l.ConfirmHeldSince(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if n := svc.Renewals() - before; n != 2 {
		t.Errorf("a confirmation since a later time: %d renewals in all, want 2", n)
	}
	if !l.GrantReceived().Before(since) {
		t.Errorf("GrantReceived %v not before %v", l.GrantReceived(), since)
	}
}

// A lease the service expired and granted again, which its client still trusts: the
// confirmation is refused, and the lease is declared lost.
func TestConfirmHeldSinceRefusedLosesLease(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New()
	ttl := 30 * time.Second
	c1 := lockclient.New(svc, lockclient.WithTTL(ttl))
	c2 := lockclient.New(svc, lockclient.WithTTL(ttl))
	t.Cleanup(func() { _ = c1.Close(ctx); _ = c2.Close(ctx) })
	l, err := c1.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(ttl + time.Second)
	if _, err := c2.Acquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if l.Err() != nil {
		t.Fatalf("the client already knows: %v", l.Err())
	}
	if err := l.ConfirmHeldSince(ctx, time.Now()); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("confirmation: %v, want ErrLeaseLost", err)
	}
	if !errors.Is(l.Err(), lockclient.ErrLeaseLost) {
		t.Errorf("lease after the refused confirmation: Err %v, want ErrLeaseLost", l.Err())
	}
	select {
	case <-l.Lost():
	default:
		t.Error("Lost not closed")
	}
}

// A service that cannot answer: the confirmation fails with ErrUnavailable, bounded by
// ctx, and the lease is not declared lost.
func TestConfirmHeldSinceUnavailableKeepsLease(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New()
	c := lockclient.New(svc, lockclient.WithTTL(time.Minute), lockclient.WithOwner("confirm-partitioned"))
	t.Cleanup(func() { _ = c.Close(ctx) })
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	svc.Partition("confirm-partitioned")
	defer svc.Heal("confirm-partitioned")
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.ConfirmHeldSince(cctx, time.Now()); !errors.Is(err, lockclient.ErrUnavailable) || errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("confirmation: %v, want ErrUnavailable (not ErrLeaseLost)", err)
	}
	if l.Err() != nil {
		t.Errorf("lease declared lost: %v", l.Err())
	}
	if err := (&lockclient.Lease{}).ConfirmHeldSince(ctx, time.Now()); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("zero-value lease: %v, want ErrLeaseLost", err)
	}
}
