package memlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Harness{New: func(*testing.T) locktest.Namespace {
		svc := memlock.New()
		return locktest.Shared{B: svc, F: svc}
	}})
}

// The same contract with one session lease per client (the etcd model): the client
// renews the session, not each lease.
func TestConformanceSessionLeases(t *testing.T) {
	locktest.Run(t, locktest.Harness{New: func(*testing.T) locktest.Namespace {
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
