package etcdlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// One session renewal per interval keeps any number of locks alive: the keep-alive
// requests a client sends do not grow with the locks it holds.
func TestSessionKeepAliveIsOnePerInterval(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ka := countKeepAlives(cli)
	ctx := ctxT(t, 20*time.Second)
	ttl := testTTL
	c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(uniquePrefix(t))), lockclient.WithTTL(ttl))
	defer c.Close(ctx)
	var leases []*lockclient.Lease
	for i := range 50 {
		l, err := c.Acquire(ctx, fmt.Sprintf("k%d", i))
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, l)
	}
	k0 := ka.keepAlives.Load()
	window := 2 * ttl
	time.Sleep(window)
	n := ka.keepAlives.Load() - k0
	for _, l := range leases {
		if l.Err() != nil {
			t.Fatalf("lease lost: %v", l.Err())
		}
	}
	t.Logf("%d keep-alive requests in %v for 50 held locks (renew interval %v)", n, window, ttl/3)
	// 2 TTLs at TTL/3 is about 6 renewals; renewing each lock would be about 300.
	if n < 2 || n > 14 {
		t.Fatalf("%d keep-alives for 50 locks over %v, want about 6", n, window)
	}
}

// BenchmarkAcquireRelease compares, on the same embedded etcd (one node, fsync on, like a
// production member) in the same run, a lock taken and released through lockclient with
// this backend and etcd's own concurrency.Mutex Lock+Unlock on a concurrency.Session
// (whose lease is kept alive by a background stream).
//
// The "etcdlock" and "concurrency.Mutex" sub-benchmarks report each one's ns/op. The
// "interleaved" one alternates the two within one loop, so that disk and machine load
// drift hit both alike, and reports both times and their ratio (etcdlock/mutex).
//
// Per operation, the Mutex sends a Txn and a Delete; etcdlock sends the acquiring Txn,
// a KeepAliveOnce concurrently with it (a grant must live a full TTL from the request,
// see the package doc; skipped when the lease's remaining time already covers it) and the
// owner-checked releasing Txn.
func BenchmarkAcquireRelease(b *testing.B) {
	cluster := etcdtest.Start(b, etcdtest.Options{Members: 1, Fsync: true})
	cli := cluster.Client(b)
	ctx := context.Background()
	newLock := func(b *testing.B) func() {
		c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(uniquePrefix(b))), lockclient.WithTTL(10*time.Second))
		b.Cleanup(func() { c.Close(ctx) })
		return func() {
			l, err := c.Acquire(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	newMutex := func(b *testing.B) func() {
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(10))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		m := concurrency.NewMutex(s, uniquePrefix(b)+"bench")
		return func() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("etcdlock", func(b *testing.B) {
		op := newLock(b)
		for b.Loop() {
			op()
		}
	})
	b.Run("concurrency.Mutex", func(b *testing.B) {
		op := newMutex(b)
		for b.Loop() {
			op()
		}
	})
	b.Run("interleaved", func(b *testing.B) {
		lock, mutex := newLock(b), newMutex(b)
		var lockT, mutexT time.Duration
		n := 0
		for b.Loop() {
			t0 := time.Now()
			lock()
			t1 := time.Now()
			mutex()
			mutexT += time.Since(t1)
			lockT += t1.Sub(t0)
			n++
		}
		b.ReportMetric(float64(lockT.Nanoseconds())/float64(n), "etcdlock-ns/op")
		b.ReportMetric(float64(mutexT.Nanoseconds())/float64(n), "mutex-ns/op")
		b.ReportMetric(float64(lockT)/float64(mutexT), "etcdlock/mutex")
	})
}

// BenchmarkSessionKeepAlives reports the keep-alive requests a client sends per renewal
// interval while it holds N locks: one, whatever N.
func BenchmarkSessionKeepAlives(b *testing.B) {
	cluster := etcdtest.StartSingle(b)
	ctx := context.Background()
	ttl := time.Second
	for _, locks := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("locks=%d", locks), func(b *testing.B) {
			cli := cluster.Client(b)
			ka := countKeepAlives(cli)
			c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(uniquePrefix(b))), lockclient.WithTTL(ttl))
			defer c.Close(ctx)
			for i := range locks {
				if _, err := c.Acquire(ctx, fmt.Sprintf("k%d", i)); err != nil {
					b.Fatal(err)
				}
			}
			k0 := ka.keepAlives.Load()
			start := time.Now()
			for b.Loop() {
				time.Sleep(ttl / 3) // one renewal interval
			}
			intervals := float64(time.Since(start)) / float64(ttl/3)
			b.ReportMetric(float64(ka.keepAlives.Load()-k0)/intervals, "keepalives/interval")
		})
	}
}
