package lockbench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// countingLease counts the keep-alive requests a client sends.
type countingLease struct {
	clientv3.Lease
	keepAlives atomic.Int64
}

func (c *countingLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	c.keepAlives.Add(1)
	return c.Lease.KeepAliveOnce(ctx, id)
}

func manyTTL() time.Duration {
	if s := os.Getenv("LOCKBENCH_TTL"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return 5 * time.Second
}

// BenchmarkManyLocks: 100 clients, each with its own etcd client, hold 100 keys each
// (10,000 in all) on one embedded etcd (fsync on). It reports
//   - keepalives/s: the keep-alive requests all clients send per second while holding
//     (one per client per renewal interval, TTL/3, whatever the number of locks);
//   - heap-B/lock: the Go heap growth of this process (the clients and the embedded etcd
//     server together) per held lock, and etcd-db-B/lock: the growth of etcd's database;
//   - regrant-s: after one client's process dies (its etcd client is closed without
//     releasing or revoking anything), the time until every one of its 100 keys is
//     granted to a client that was waiting for it — its session lease's expiry at etcd
//     (TTL plus the lease slack, rounded up to whole seconds) plus the hand-overs; and
//     first-regrant-s, the time until the first of them.
//
// LOCKBENCH_TTL sets the clients' TTL (default 5s). One iteration is the whole
// measurement: run with -benchtime=1x.
func BenchmarkManyLocks(b *testing.B) {
	const clients, perClient = 100, 100
	ttl := manyTTL()
	cluster := etcdtest.Start(b, etcdtest.Options{Members: 1, Fsync: true})
	endpoints := cluster.Endpoints()
	admin := etcdtest.NewClient(b, endpoints...)
	ctx := context.Background()
	for b.Loop() {
		prefix := fmt.Sprintf("/lockbench/many/%d/", time.Now().UnixNano())
		clis := make([]*clientv3.Client, clients)
		counters := make([]*countingLease, clients)
		cs := make([]*lockclient.Client, clients)
		for i := range clients {
			cli, err := clientv3.New(etcdtest.ClientConfig(endpoints...))
			if err != nil {
				b.Fatal(err)
			}
			clis[i] = cli
			counters[i] = &countingLease{Lease: cli.Lease}
			cli.Lease = counters[i]
			cs[i] = lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix)), lockclient.WithTTL(ttl), lockclient.WithOwner(fmt.Sprintf("c%d", i)))
		}
		defer func() {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for i := range clients {
				cs[i].Close(cctx)
				clis[i].Close()
			}
		}()
		// Open every session first, so that the measured heap growth is the locks'.
		for i := range clients {
			l, err := cs[i].Acquire(ctx, "warm")
			if err != nil {
				b.Fatal(err)
			}
			l.Release(ctx)
		}
		st0, err := admin.Status(ctx, endpoints[0])
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)

		start := time.Now()
		leases := make([][]*lockclient.Lease, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range perClient {
					l, err := cs[i].Acquire(ctx, fmt.Sprintf("k%d-%d", i, j))
					if err != nil {
						b.Error(err)
						return
					}
					leases[i] = append(leases[i], l)
				}
			}()
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		acquireAll := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		st1, err := admin.Status(ctx, endpoints[0])
		if err != nil {
			b.Fatal(err)
		}
		total := clients * perClient

		// Keep-alive traffic while everything is held.
		var k0 int64
		for _, c := range counters {
			k0 += c.keepAlives.Load()
		}
		window := 3 * ttl
		time.Sleep(window)
		var k1 int64
		for _, c := range counters {
			k1 += c.keepAlives.Load()
		}
		for i := range clients {
			for _, l := range leases[i] {
				if l.Err() != nil {
					b.Fatalf("lease lost while holding: %v", l.Err())
				}
			}
		}

		// One client's process dies; the others were waiting for its keys.
		victim := 0
		granted := make(chan time.Time, perClient)
		wctx, wcancel := context.WithTimeout(ctx, 10*ttl+30*time.Second)
		defer wcancel()
		for j := range perClient {
			w := cs[1+j%(clients-1)]
			go func() {
				l, err := w.Acquire(wctx, fmt.Sprintf("k%d-%d", victim, j))
				if err != nil {
					b.Error(err)
					granted <- time.Time{}
					return
				}
				granted <- time.Now()
				l.Release(ctx)
			}()
		}
		// Wait until every waiter is queued behind the victim's keys.
		for {
			resp, err := admin.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
			if err != nil {
				b.Fatal(err)
			}
			if resp.Count == int64(total+perClient) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		died := time.Now()
		clis[victim].Close() // no release, no revoke: the lease expires at etcd
		var first, last time.Time
		for range perClient {
			t := <-granted
			if t.IsZero() {
				b.FailNow()
			}
			if first.IsZero() || t.Before(first) {
				first = t
			}
			if t.After(last) {
				last = t
			}
		}

		b.ReportMetric(float64(k1-k0)/window.Seconds(), "keepalives/s")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/float64(total), "heap-B/lock")
		b.ReportMetric(float64(st1.DbSizeInUse-st0.DbSizeInUse)/float64(total), "etcd-db-B/lock")
		b.ReportMetric(acquireAll.Seconds(), "acquire-all-s")
		b.ReportMetric(first.Sub(died).Seconds(), "first-regrant-s")
		b.ReportMetric(last.Sub(died).Seconds(), "regrant-s")
		b.Logf("%d clients x %d locks, TTL %v: %d keep-alives in %v; heap %d -> %d bytes; etcd db in use %d -> %d bytes; all acquired in %v; victim's %d keys re-granted %v..%v after it died",
			clients, perClient, ttl, k1-k0, window, m0.HeapAlloc, m1.HeapAlloc, st0.DbSizeInUse, st1.DbSizeInUse, acquireAll, perClient, first.Sub(died), last.Sub(died))
	}
}
