package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// A lease its client declared lost (its renewals failed until the local deadline) does
// not keep its key alive through later renewals of the same session lease — here the
// keep-alive that comes with granting another lock: the key is deleted (owner-checked),
// so that others, and the same client, can take the lock without waiting for the user's
// Release or for the session lease to end.
func TestLostLeaseKeyIsFreed(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	ka := countKeepAlives(cli)
	observer := cluster.Client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	ttl := testTTL
	c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix), etcdlock.WithRequestTimeout(requestTimeout)),
		lockclient.WithTTL(ttl), lockclient.WithSafetyMargin(ttl/4))
	defer c.Close(ctx)
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	failure := error(status.Error(codes.Unavailable, "test: keep-alive cut"))
	ka.fail.Store(&failure)
	select {
	case <-l.Lost():
	case <-time.After(2 * ttl):
		t.Fatal("lease not lost while its renewals failed")
	}
	ka.fail.Store(nil)
	lost := time.Now()
	// The session lease is still alive at etcd (TTL + 1s slack): taking another lock
	// renews it.
	lo, err := c.Acquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	defer lo.Release(ctx)
	for {
		resp, err := observer.Get(ctx, prefix+"k/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == 0 {
			break
		}
		if time.Since(lost) > ttl {
			t.Fatal("the lost lease's key still holds the lock a TTL after the lease was declared lost")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the lost lease's key was freed %v after the lease was declared lost", time.Since(lost))
	l2, err := c.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatalf("the same client's TryAcquire after its lease was lost = %v, want a grant", err)
	}
	if l2.Token() <= l.Token() {
		t.Fatalf("token %d after the lost lease, want > %d", l2.Token(), l.Token())
	}
	if err := l.Release(ctx); !errors.Is(err, lockclient.ErrLeaseLost) && !errors.Is(err, lockclient.ErrNotOwner) {
		t.Fatalf("Release of the lost lease = %v, want ErrLeaseLost or ErrNotOwner", err)
	}
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A TryAcquire cancelled while its transaction is on its way may still be applied by
// etcd afterwards, leaving a grant nobody trusts. Such keys are swept promptly — here
// the session holds nothing, so no renewal would ever clean them, and its lease lives
// 11s — and another client takes the lock within about a second.
func TestCancelledTryAcquireLeavesNoGrant(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	observer := cluster.Client(t)
	ctx := ctxT(t, 60*time.Second)
	a := ns.newClient("a", 10*time.Second)
	b := ns.newClient("b", 10*time.Second)
	if l, err := a.Acquire(ctx, "warm"); err != nil { // open the session first
		t.Fatal(err)
	} else {
		l.Release(ctx)
	}
	granted, cancelled := 0, 0
	var longest time.Duration
	for i := range 32 {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Duration(i%8)*100*time.Microsecond, cancel)
		l, err := a.TryAcquire(cctx, "k")
		cancel()
		if err == nil {
			granted++
			l.Release(ctx)
			continue
		}
		cancelled++
		if !errors.Is(err, lockclient.ErrUnavailable) && !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled TryAcquire = %v", err)
		}
		start := time.Now()
		for {
			lb, err := b.TryAcquire(ctx, "k")
			if err == nil {
				lb.Release(ctx)
				longest = max(longest, time.Since(start))
				break
			}
			if !errors.Is(err, lockclient.ErrHeld) {
				t.Fatal(err)
			}
			if time.Since(start) > 3*time.Second {
				resp, _ := observer.Get(ctx, ns.prefix, lockKeys(ns.prefix))
				t.Fatalf("attempt %d: the lock is still held 3s after a cancelled TryAcquire: %v", i, resp.Kvs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("%d TryAcquires cancelled, %d granted before the cancel; the other client waited at most %v for the lock", cancelled, granted, longest)
}

// A lease the client drops because the service refused the session's renewal is freed at
// the service too (owner-checked, in the background), even when its grant survived on a
// newer session lease: session lease L1 is revoked while lease "a" is held, TryAcquire("b")
// moves the session to lease L2, and the next RenewSession reports the earlier loss, so the
// client declares every lease lost, "b" included. The application does not release "b" and
// takes another lock, "c", whose keep-alives renew L2; another client still gets "b" well
// within the etcd lease TTL, instead of waiting behind a holder that reports it lost for as
// long as the first client holds anything (G7 clean-ups).
func TestLeaseDroppedOnRefusedSessionRenewalFreesKey(t *testing.T) {
	cluster := etcdtest.StartSingle(t)
	cli := cluster.Client(t)
	observer := cluster.Client(t)
	other := cluster.Client(t)
	ctx := ctxT(t, 30*time.Second)
	prefix := uniquePrefix(t)
	ttl := testTTL
	c := lockclient.New(etcdlock.New(cli, etcdlock.WithPrefix(prefix)), lockclient.WithTTL(ttl), lockclient.WithOwner("x"))
	defer c.Close(context.Background())
	d := lockclient.New(etcdlock.New(other, etcdlock.WithPrefix(prefix)), lockclient.WithTTL(ttl), lockclient.WithOwner("y"))
	defer d.Close(context.Background())

	la, err := c.Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := observer.Get(ctx, prefix, lockKeys(prefix))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get = %v, %v", resp, err)
	}
	if _, err := observer.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	lb, err := c.TryAcquire(ctx, "b") // on a new session lease
	if err != nil {
		t.Fatalf("TryAcquire after the revocation: %v", err)
	}
	select {
	case <-la.Lost():
	case <-time.After(ttl):
		t.Fatal("lease on the revoked session lease not reported lost")
	}
	select {
	case <-lb.Lost():
	case <-time.After(ttl):
		t.Fatal("b not dropped: the scenario did not happen")
	}
	if !errors.Is(lb.Err(), lockclient.ErrLeaseLost) {
		t.Fatalf("b: Err = %v", lb.Err())
	}
	// The application moves on (b is lost: it does not Release it) and takes another lock.
	lc, err := c.Acquire(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Release(context.Background())

	// etcd's session lease is ceil(ttl + 1s slack) = 3s: without renewals b's key is gone by then.
	wctx, cancel := context.WithTimeout(ctx, 2*ttl+time.Second)
	defer cancel()
	start := time.Now()
	ld, err := d.Acquire(wctx, "b")
	if err != nil {
		kv, _ := observer.Get(ctx, prefix, lockKeys(prefix))
		var keys []string
		for _, k := range kv.Kvs {
			keys = append(keys, string(k.Key)+"="+string(k.Value))
		}
		t.Fatalf("another client waited %v for b, whose only holder declared it lost (%v); keys: %v; Acquire: %v",
			time.Since(start).Round(time.Millisecond), lb.Err(), keys, err)
	}
	ld.Release(ctx)
}
