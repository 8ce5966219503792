// Compaction of etcd's history while clients wait for a lock (from red-team pass rt53e,
// kept as a permanent check).
//
//	go test -count=1 -run TestCompactionWhileWaitingGrantsEveryWaiter ./lockclient/etcdlock/

package etcdlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
)

// etcd compacts its history to the current revision every few milliseconds while three
// clients queue for one lock and hand it over six times each: a waiter's watch from a
// compacted revision must not end its wait with an error (ErrCompacted) nor lose its
// turn. Every Acquire is granted, tokens increase grant after grant, no lease is lost
// and every Release succeeds.
func TestCompactionWhileWaitingGrantsEveryWaiter(t *testing.T) {
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	admin := cluster.Client(t)
	cctx, stopCompacting := context.WithCancel(context.Background())
	compactions := 0
	compacted := make(chan struct{})
	go func() {
		defer close(compacted)
		for cctx.Err() == nil {
			if resp, err := admin.Get(cctx, "compaction-probe"); err == nil {
				if _, err := admin.Compact(cctx, resp.Header.Revision); err == nil {
					compactions++
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	clients := []*lockclient.Client{ns.newClient("a", testTTL), ns.newClient("b", testTTL), ns.newClient("c", testTTL)}
	var mu sync.Mutex
	var last uint64
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 6 {
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
				l, err := c.Acquire(ctx, "k")
				cancel()
				if err != nil {
					t.Errorf("client %d round %d: Acquire under compaction: %v", i, round, err)
					return
				}
				mu.Lock()
				if l.Token() <= last {
					t.Errorf("client %d: token %d after %d", i, l.Token(), last)
				}
				last = l.Token()
				mu.Unlock()
				time.Sleep(30 * time.Millisecond)
				if err := l.Err(); err != nil {
					t.Errorf("client %d: lease lost under compaction: %v", i, err)
				}
				ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
				if err := l.Release(ctx); err != nil {
					t.Errorf("client %d: Release under compaction: %v", i, err)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	stopCompacting()
	<-compacted
	t.Logf("%d compactions during 18 grants", compactions)
	if compactions == 0 {
		t.Error("etcd compacted nothing: the test checked nothing")
	}
}
