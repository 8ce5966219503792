package memlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/metrictest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// Scripted events and the exact counts they must produce.
func TestMetrics(t *testing.T) {
	mr := metrictest.New(t)
	svc := memlock.New()
	ttl := 2 * time.Second
	opts := []lockclient.Option{lockclient.WithTTL(ttl), lockclient.WithRenewInterval(30 * time.Millisecond), lockclient.WithMeterProvider(mr)}
	a := lockclient.New(svc, append(opts, lockclient.WithOwner("a"))...)
	b := lockclient.New(svc, append(opts, lockclient.WithOwner("b"))...)
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	ctx := context.Background()

	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// One acquire that waited: b waits until a releases.
	go func() {
		time.Sleep(100 * time.Millisecond)
		la.Release(ctx)
	}()
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	n, sum := mr.Histogram(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("acquired"), lockclient.AttrBackend.String("memlock"))
	if n != 2 || sum < 0.09 {
		t.Fatalf("acquired: %d acquisitions totalling %.3fs, want 2 with one that waited ~0.1s", n, sum)
	}
	if _, err := a.TryAcquire(ctx, "k"); err == nil {
		t.Fatal("TryAcquire of a held lock succeeded")
	}
	if got := mr.Sum(t, lockclient.MetricAcquireDuration, lockclient.AttrOutcome.String("held")); got != 1 {
		t.Fatalf("held outcomes = %d, want 1", got)
	}

	// One lost lease: the service's clock jumps past the TTL, the next renewal is refused.
	svc.Advance(ttl)
	select {
	case <-lb.Lost():
	case <-time.After(time.Second):
		t.Fatal("lease not lost")
	}
	if got := mr.Sum(t, lockclient.MetricLeasesLost, lockclient.AttrCause.String("refused")); got != 1 {
		t.Fatalf("leases lost = %d, want 1", got)
	}
	if got := mr.Sum(t, lockclient.MetricLeasesLost); got != 1 {
		t.Fatalf("leases lost (any cause) = %d, want 1", got)
	}
	if got := mr.Sum(t, lockclient.MetricRenewals, lockclient.AttrOutcome.String("refused")); got != 1 {
		t.Fatalf("refused renewals = %d, want 1", got)
	}
	if got := mr.Sum(t, lockclient.MetricHoldDuration, lockclient.AttrEnd.String("released")); got != 1 {
		t.Fatalf("released holds = %d, want 1", got)
	}
}
