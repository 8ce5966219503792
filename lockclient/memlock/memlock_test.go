package memlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Harness{FIFO: true, New: func(*testing.T) locktest.Namespace {
		svc := memlock.New()
		return locktest.Shared{B: svc, F: svc}
	}})
}

// The token floor (lockclient.FloorRaiser), per grant and with session leases.
func TestFloor(t *testing.T) {
	for name, opts := range map[string][]memlock.Option{"PerGrant": nil, "SessionLeases": {memlock.WithSessionLeases()}} {
		t.Run(name, func(t *testing.T) {
			locktest.RunFloor(t, locktest.Harness{New: func(*testing.T) locktest.Namespace {
				svc := memlock.New(opts...)
				return locktest.Shared{B: svc, F: svc}
			}})
		})
	}
}

// WithMinToken starts the counter at the floor.
func TestWithMinToken(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New(memlock.WithMinToken(500))
	if n, err := svc.LastToken(ctx); err != nil || n != 500 {
		t.Fatalf("LastToken = %d, %v; want 500", n, err)
	}
	c := lockclient.New(svc)
	defer c.Close(ctx)
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() != 501 {
		t.Fatalf("first token %d, want 501", l.Token())
	}
	if err := c.RaiseFloor(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.LastToken(ctx); n != 501 {
		t.Fatalf("LastToken after a lower RaiseFloor = %d, want 501", n)
	}
}

// A floor above 2^63−2 is refused with ErrInvalidConfig and raises nothing, as on the
// other backends: the counter never wraps, so the next grant's token is above the
// earlier ones.
func TestRaiseFloorAboveMaxRefused(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New()
	c := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer c.Close(ctx)
	l1, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	first := l1.Token()
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, min := range []uint64{math.MaxUint64, math.MaxInt64} {
		if err := c.RaiseFloor(ctx, min); !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("RaiseFloor(%d) = %v, want ErrInvalidConfig", min, err)
		}
	}
	if n, err := svc.LastToken(ctx); err != nil || n != first {
		t.Fatalf("LastToken after refused raises = %d, %v; want %d", n, err, first)
	}
	l2, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	if l2.Token() <= first {
		t.Fatalf("token %d after refused raises, not above the earlier token %d", l2.Token(), first)
	}
	if err := c.RaiseFloor(ctx, math.MaxInt64-1); err != nil {
		t.Fatalf("RaiseFloor(2^63-2), the highest floor: %v", err)
	}
}

// WithMinToken above 2^63−2 is an invalid option: CheckConfig and every Acquire return
// ErrInvalidConfig, and no token (least of all a wrapped 0) is granted.
func TestWithMinTokenAboveMaxRefused(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New(memlock.WithMinToken(math.MaxUint64))
	if err := svc.CheckConfig(); !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("CheckConfig = %v, want ErrInvalidConfig", err)
	}
	c := lockclient.New(svc, lockclient.WithTTL(time.Second))
	defer c.Close(ctx)
	l, err := c.Acquire(ctx, "k")
	if err == nil {
		l.Release(ctx)
		t.Fatalf("WithMinToken(MaxUint64): granted token %d, want ErrInvalidConfig", l.Token())
	}
	if !errors.Is(err, lockclient.ErrInvalidConfig) {
		t.Fatalf("Acquire = %v, want ErrInvalidConfig", err)
	}
}

// The same contract with one session lease per client (the etcd model): the client
// renews the session, not each lease.
func TestConformanceSessionLeases(t *testing.T) {
	locktest.Run(t, locktest.Harness{FIFO: true, New: func(*testing.T) locktest.Namespace {
		svc := memlock.New(memlock.WithSessionLeases())
		return locktest.Shared{B: svc, F: svc}
	}})
}

// With session leases, one renewal per interval keeps any number of leases alive.
func TestSessionRenewalIsOnePerInterval(t *testing.T) {
	svc := memlock.New(memlock.WithSessionLeases())
	ttl := 300 * time.Millisecond
	c := lockclient.New(svc, lockclient.WithTTL(ttl))
	defer c.Close(context.Background())
	ctx := context.Background()
	var leases []*lockclient.Lease
	for i := range 50 {
		l, err := c.Acquire(ctx, fmt.Sprintf("k%d", i))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	r0 := svc.Renewals()
	time.Sleep(3 * ttl)
	renewals := svc.Renewals() - r0
	for _, l := range leases {
		if l.Err() != nil {
			t.Fatalf("lease lost: %v", l.Err())
		}
	}
	// 3 TTLs at TTL/3 is about 9 renewals; per-lease renewal would be about 450.
	if renewals < 3 || renewals > 20 {
		t.Fatalf("%d session renewals for 50 leases over 3 TTLs, want about 9", renewals)
	}
}

// The session-level suite, on the service's own clock (Advance).
func TestSessionConformance(t *testing.T) {
	for name, opts := range map[string][]memlock.Option{"PerGrant": nil, "SessionLeases": {memlock.WithSessionLeases()}} {
		t.Run(name, func(t *testing.T) {
			locktest.RunSession(t, locktest.SessionHarness{
				New: func(*testing.T) locktest.Namespace {
					svc := memlock.New(opts...)
					return locktest.Shared{B: svc, F: svc}
				},
				ForeignGrant: func(g lockclient.Grant) lockclient.Grant { return lockclient.Grant{Key: g.Key, Token: g.Token} },
				ServerClock: func(t *testing.T, ns locktest.Namespace) locktest.ServerClock {
					return serviceClock{ns.(locktest.Shared).B.(*memlock.Service)}
				},
			})
		})
	}
}

type serviceClock struct{ svc *memlock.Service }

func (c serviceClock) CheckExpiry(t *testing.T, key string, l *lockclient.Lease, ttl time.Duration) {
	if owner, token, ok := c.svc.Holder(key); !ok || owner != "a" || token != l.Token() {
		t.Fatalf("service holder of %s: %q, token %d, held %v; want a, token %d", key, owner, token, ok, l.Token())
	}
}

func (c serviceClock) Expire(t *testing.T, key string) {
	c.svc.Advance(time.Hour)
}
