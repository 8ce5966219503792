package memlock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// A renewal the service refuses closes Lost at once, long before the local deadline.
func TestRefusedRenewalLosesAtOnce(t *testing.T) {
	svc := memlock.New()
	ttl := 2 * time.Second
	c := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithRenewInterval(50*time.Millisecond))
	defer c.Close(context.Background())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(ttl) // the service's clock says the grant expired
	select {
	case <-l.Lost():
	case <-time.After(ttl / 2):
		t.Fatal("refused renewal did not close Lost before the local deadline")
	}
	if !errors.Is(l.Err(), lockclient.ErrLeaseLost) {
		t.Fatalf("Err = %v", l.Err())
	}
	if err := l.Release(ctx); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Release of a lost lease = %v, want ErrLeaseLost", err)
	}
}

// Acquire waits for the expiry of a holder that stopped renewing (a crashed process).
func TestAcquireWaitsForExpiry(t *testing.T) {
	svc := memlock.New()
	ttl := 300 * time.Millisecond
	a := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("a"))
	b := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("b"))
	defer a.Close(context.Background())
	defer b.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	svc.Partition("a") // a is gone: it neither renews nor releases
	start := time.Now()
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	if waited < ttl/2 {
		t.Fatalf("granted after %v, before the holder's TTL could have run out", waited)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("tokens %d then %d", la.Token(), lb.Token())
	}
	svc.Heal("a")
}

// Close releases held leases, stops the watchdog and refuses new work.
func TestCloseReleases(t *testing.T) {
	svc := memlock.New()
	c := lockclient.New(svc)
	ctx := context.Background()
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, held := svc.Holder("k"); held {
		t.Fatal("Close left the lock held")
	}
	select {
	case <-l.Lost():
	default:
		t.Fatal("lease not ended by Close")
	}
	if _, err := c.Acquire(ctx, "k"); !errors.Is(err, lockclient.ErrClosed) {
		t.Fatalf("Acquire after Close = %v", err)
	}
}

func Example() {
	svc := memlock.New() // the in-process lock service; etcdlock, sqllock and redislock are the networked ones
	locks := lockclient.New(svc, lockclient.WithTTL(10*time.Second))
	defer locks.Close(context.Background())

	ctx := context.Background()
	lease, err := locks.Acquire(ctx, "account:42") // waits while another owner holds it
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	defer lease.Release(context.WithoutCancel(ctx))

	fmt.Println("token:", lease.Token())
	select {
	case <-lease.Lost():
		fmt.Println("lost:", lease.Err())
	default:
		fmt.Println("held")
	}

	other := lockclient.New(svc) // another process
	defer other.Close(ctx)
	_, err = other.TryAcquire(ctx, "account:42")
	fmt.Println("another process:", errors.Is(err, lockclient.ErrHeld))
	// Output:
	// token: 1
	// held
	// another process: true
}

// BenchmarkAcquireRelease measures one uncontended Acquire+Release on memlock.
func BenchmarkAcquireRelease(b *testing.B) {
	svc := memlock.New()
	c := lockclient.New(svc)
	defer c.Close(context.Background())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.Acquire(ctx, "k")
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHeldLeases holds 10,000 leases on one client for a few renewal rounds and
// reports the memory per held lease and the renewal calls per second the client makes.
func BenchmarkHeldLeases(b *testing.B) {
	const n = 10000
	ttl := time.Second
	for b.Loop() {
		svc := memlock.New()
		c := lockclient.New(svc, lockclient.WithTTL(ttl))
		ctx := context.Background()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		leases := make([]*lockclient.Lease, n)
		for i := range leases {
			l, err := c.Acquire(ctx, fmt.Sprintf("k%05d", i))
			if err != nil {
				b.Fatal(err)
			}
			leases[i] = l
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		r0, t0 := svc.Renewals(), time.Now()
		time.Sleep(2 * ttl)
		renewals := float64(svc.Renewals()-r0) / time.Since(t0).Seconds()
		for _, l := range leases {
			select {
			case <-l.Lost():
				b.Fatalf("lease lost while renewing 10k: %v", l.Err())
			default:
			}
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/lease")
		b.ReportMetric(renewals, "renewals/s")
		b.ReportMetric(float64(n)/(ttl.Seconds()/3), "expected-renewals/s")
		c.Close(ctx)
	}
}

// With WithSessionLeases, a session whose lease the service expired (its clock moved on:
// Advance) while the client could still trust its grants is not revived by a later
// TryAcquire: that TryAcquire gives the session a new lease, but the next RenewSession
// answers ErrLeaseLost, so the client loses the lease whose key another client took
// instead of extending it (G7).
func TestExpiredSessionLeaseNotRenewedAfterNewGrant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := memlock.New(memlock.WithSessionLeases())
	ttl := 3 * time.Second
	a := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithRenewInterval(2*time.Second), lockclient.WithOwner("a"))
	b := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithOwner("b"))
	defer a.Close(context.Background())
	defer b.Close(context.Background())

	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	firstDeadline := la.Deadline()
	svc.Advance(ttl) // the service expires a's session lease, and with it a's grant of k
	lb, err := b.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release(context.Background())
	// a takes another key: the service gives a's session a new lease.
	lo, err := a.TryAcquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Release(context.Background())

	select {
	case <-la.Lost():
	case <-time.After(time.Until(firstDeadline) + 100*time.Millisecond):
	}
	if owner, tok, ok := svc.Holder("k"); !ok || owner != "b" {
		t.Fatalf("holder of k = %q %d %v, want b", owner, tok, ok)
	}
	if err := la.Err(); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("a's lease of k (token %d): Err = %v at its local deadline (%v, now %v), while b holds k with token %d; want ErrLeaseLost",
			la.Token(), err, firstDeadline, la.Deadline(), lb.Token())
	}
}

// With WithSessionLeases, a session lease whose expiry a RenewSession already reported
// (ErrLeaseLost) is not reported again: once a later grant gave the session a new lease,
// renewals of that lease succeed, even after the grants of the old one were dropped.
func TestExpiredSessionLeaseReportedOnce(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New(memlock.WithSessionLeases())
	ttl := 3 * time.Second
	sess, err := svc.Open(ctx, "a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close(ctx)
	r, ok := sess.(lockclient.SessionRenewer)
	if !ok {
		t.Fatal("a session-lease session is not a lockclient.SessionRenewer")
	}
	if _, err := sess.TryAcquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	svc.Advance(ttl / 2)
	if err := r.RenewSession(ctx); err != nil {
		t.Fatalf("RenewSession of a live lease: %v", err)
	}
	svc.Advance(2 * ttl)
	if err := r.RenewSession(ctx); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("RenewSession of an expired lease = %v, want ErrLeaseLost", err)
	}
	if _, _, ok := svc.Holder("k"); ok {
		t.Fatal("k still held after its session lease expired")
	}
	if _, err := sess.TryAcquire(ctx, "other"); err != nil { // a new session lease
		t.Fatal(err)
	}
	if err := r.RenewSession(ctx); err != nil {
		t.Fatalf("RenewSession of the new lease = %v, want nil: the old lease's loss was reported already", err)
	}
}
