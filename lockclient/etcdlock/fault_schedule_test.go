// Randomized fault schedules against etcdlock (from red-team pass rt53e, kept as a
// permanent check; the harness is internal/lockfaults): three clients take two locks
// each (one session lease carries several grants, renewed once for all) while a
// scheduler stalls and resets their connections to a single member, or, on a
// three-member cluster, also kills the leader and kills two members at once (quorum
// lost) and restarts them. Every write of a holder is checked against etcd read
// directly.
//
// Knobs (internal/lockfaults, docs/design.md "Long forms"):
//
//	FENCEDSQL_SCHEDULES_DURATION=d  how long each schedule runs (default 4s single
//	                             member, 3s cluster)
//	FENCEDSQL_SCHEDULES_SEED=n      replay: the seed the test logs (default time-based)
//
// A long run: FENCEDSQL_SCHEDULES_DURATION=60s go test -count=1 -timeout 0 -run
// 'FaultScheduleLeaseNeverHeldPastService' ./lockclient/etcdlock/

package etcdlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/lockfaults"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/lockclient"
)

// etcdHolds is a lockfaults.Schedule's Holds for locks under prefix, read through
// admin (no proxy; linearizable, so it fails on a cluster without quorum): the lease
// is held when its lock's first-created key is its owner's.
func etcdHolds(admin *clientv3.Client, prefix string) func(context.Context, string, string, *lockclient.Lease) (bool, string, error) {
	return func(ctx context.Context, owner, lock string, _ *lockclient.Lease) (bool, string, error) {
		resp, err := admin.Get(ctx, prefix+lock+"/", clientv3.WithFirstCreate()...)
		switch {
		case err != nil:
			return false, "", err
		case len(resp.Kvs) == 0:
			return false, "no key of the lock", nil
		}
		kv := resp.Kvs[0]
		return string(kv.Value) == owner, fmt.Sprintf("first key %s, %q's", kv.Key, kv.Value), nil
	}
}

// etcdSchedule is the part of both schedules that does not depend on the topology.
func etcdSchedule(clients []*lockclient.Client, admin *clientv3.Client, prefix string) lockfaults.Schedule {
	return lockfaults.Schedule{
		Clients:         clients,
		Locks:           []string{"acct-a", "acct-b"},
		AcquireDeadline: [2]time.Duration{300 * time.Millisecond, 1800 * time.Millisecond},
		ReleaseDeadline: time.Second,
		Slack:           requestTimeout + time.Second,
		WriteGap:        300 * time.Millisecond,
		Holds:           etcdHolds(admin, prefix),
		FaultGap:        700 * time.Millisecond,
	}
}

// Under random stalls (0.3 to 3.3 s, past the 2 s TTL) and resets of the clients'
// connections to a single member, a lease whose Err() is nil is its lock's first key
// at etcd and its owner's, write tokens per lock never go back, and Acquire and
// Release answer within their deadlines with typed errors (lockfaults.Schedule).
func TestFaultScheduleLeaseNeverHeldPastService(t *testing.T) {
	k := lockfaults.ReadKnobs(t, 4*time.Second)
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	owners := []string{"w0", "w1", "w2"}
	var clients []*lockclient.Client
	for _, o := range owners {
		clients = append(clients, ns.newClient(o, testTTL))
	}
	faults := lockfaults.Connections{G: ns.Group, Owners: owners, Stall: [2]time.Duration{300 * time.Millisecond, 3300 * time.Millisecond}}
	s := etcdSchedule(clients, cluster.Client(t), ns.prefix)
	s.Fault, s.Heal = faults.Fault, faults.Heal
	lockfaults.Run(t, k, s)
}

// The same checker on a three-member cluster, every owner reaching each member through
// its own proxy: the scheduler kills the leader and restarts it, kills two members at
// once (no quorum: the direct read fails too, and the write is not judged) and
// restarts them, or stalls or resets one owner's connection to one member.
func TestClusterFaultScheduleLeaseNeverHeldPastService(t *testing.T) {
	k := lockfaults.ReadKnobs(t, 3*time.Second)
	cluster := etcdtest.StartThree(t)
	prefix := uniquePrefix(t)
	owners := []string{"w0", "w1", "w2"}
	groups := make([]*netproxy.Group, len(cluster.Members))
	for i, m := range cluster.Members {
		groups[i] = netproxy.NewGroup(m.ClientAddr)
		t.Cleanup(groups[i].Close)
	}
	var clients []*lockclient.Client
	for _, o := range owners {
		var eps []string
		for _, g := range groups {
			p, err := g.Proxy(o)
			if err != nil {
				t.Fatal(err)
			}
			eps = append(eps, p.Addr())
		}
		clients = append(clients, leaderClient(t, eps, prefix, o, testTTL))
	}
	restart := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cluster.Restart(ctx, i); err != nil {
			return fmt.Errorf("restart member %d: %w", i, err)
		}
		return nil
	}
	s := etcdSchedule(clients, etcdtest.NewClient(t, cluster.AllEndpoints()...), prefix)
	s.SkipUnanswered = true
	s.Fault = func(rng *rand.Rand, sleep func(time.Duration) time.Duration) (string, error) {
		down := time.Duration(500+rng.IntN(2500)) * time.Millisecond
		switch rng.IntN(5) {
		case 0:
			i, err := cluster.WaitLeader(10 * time.Second)
			if err != nil {
				return "kill the leader", fmt.Errorf("no leader: %w", err)
			}
			cluster.Kill(i)
			down = sleep(down)
			return fmt.Sprintf("kill leader %d for %v", i, down), restart(i)
		case 1:
			i := rng.IntN(3)
			j := (i + 1 + rng.IntN(2)) % 3
			cluster.Kill(i)
			cluster.Kill(j)
			down = sleep(down)
			return fmt.Sprintf("kill members %d and %d (no quorum) for %v", i, j, down), errors.Join(restart(i), restart(j))
		}
		m := rng.IntN(3)
		faults := lockfaults.Connections{G: groups[m], Owners: owners, Stall: [2]time.Duration{300 * time.Millisecond, 3300 * time.Millisecond}}
		what, err := faults.Fault(rng, sleep)
		return fmt.Sprintf("member %d: %s", m, what), err
	}
	s.Heal = func() {
		for _, g := range groups {
			lockfaults.Connections{G: g, Owners: owners}.Heal()
		}
	}
	lockfaults.Run(t, k, s)
}
