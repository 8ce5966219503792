package fencetest

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// StaleWindow sets up, on memlock, the window of a lease the service expired while its
// client has not noticed (a pause, or an expiry the client cannot see): client 1's lease
// of account:1 (l1) expired at the service and was re-granted to client 2 (n1), which
// wrote row 1 with newerWrite (called with n1); client 1 then took account:2 (l2, the
// largest token) and still trusts l1. It fails the test if client 1 already knows l1
// is lost. The clients are closed when the test ends.
func StaleWindow(t testing.TB, ctx context.Context, newerWrite func(n1 *lockclient.Lease) error) (l1, n1, l2 *lockclient.Lease) {
	t.Helper()
	svc := memlock.New()
	ttl := 30 * time.Second
	c1 := lockclient.New(svc, lockclient.WithTTL(ttl))
	c2 := lockclient.New(svc, lockclient.WithTTL(ttl))
	t.Cleanup(func() { _ = c1.Close(context.Background()); _ = c2.Close(context.Background()) })
	l1, err := c1.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(ttl + time.Second)
	if n1, err = c2.Acquire(ctx, "account:1"); err != nil {
		t.Fatal(err)
	}
	if err := newerWrite(n1); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	if l2, err = c1.Acquire(ctx, "account:2"); err != nil {
		t.Fatal(err)
	}
	if l1.Err() != nil {
		t.Fatalf("client 1 already knows l1 is lost (%v): not the window this test needs", l1.Err())
	}
	return l1, n1, l2
}
