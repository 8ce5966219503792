package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// TestFloorKeyDeletedTokenGoesBackRefused (red-team rt28b F2): the floor key <prefix>~floor is
// deleted by hand (an operator's clean-up of "stray" keys, an etcdctl del --prefix of
// the wrong range, a restore of the keyspace without it). The offset falls back to 0 and
// the same Client that was just granted offset+revision (above 10^9) is granted a bare
// revision (a few dozen) for the same lock, without any error. The package doc forbids
// the deletion, but nothing notices it, although the Client (or the etcdlock session)
// holds the proof: its own earlier, higher token.
//
// Right behaviour (G16; Lease.Token: "strictly greater than the token of every earlier
// grant of the same lock service"): a grant whose token is not above the highest token
// this Client (or Backend) has been granted is refused with a typed error (e.g. wrapping
// ErrInvalidConfig, naming the floor key and the fix: RaiseFloor), not handed out.
func TestFloorKeyDeletedTokenGoesBackRefused(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	admin := etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(ns.prefix))
	raw := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	if err := admin.RaiseFloor(ctx, 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	c := ns.newClient("a", testTTL)
	l1, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	first := l1.Token()
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Delete(ctx, admin.FloorKey()); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	l2, err := c.Acquire(actx, "k")
	if err != nil {
		if errors.Is(err, lockclient.ErrInvalidConfig) {
			return
		}
		t.Fatalf("Acquire after the floor key was deleted: %v; want a typed error or a token above %d", err, first)
	}
	defer l2.Release(ctx)
	if l2.Token() <= first {
		t.Fatalf("the same Client was granted token %d for %q after its own earlier grant of token %d: the floor key was deleted "+
			"and the token went back unnoticed", l2.Token(), "k", first)
	}
}

// TestCorruptFloorKeyIsConfigError (red-team rt28b F7): a floor key that holds no offset (a value
// written by hand: "1e9", "-5", an offset above 2^62, text) makes every grant fail with
// an error wrapping ErrUnavailable, so Acquire retries with backoff until the caller's
// deadline, logging "lock service unreachable": the service is reachable, its
// configuration is broken, and no retry can fix it.
//
// Right behaviour: like redislock's exhausted counter and sqllock's missing counter row,
// a token source that cannot give a token is a configuration error: an error wrapping
// lockclient.ErrInvalidConfig naming the floor key, returned by Acquire at once.
func TestCorruptFloorKeyIsConfigError(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartSingle(t)
	ns := newProxiedNS(t, cluster.Members[0].ClientAddr)
	admin := etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(ns.prefix))
	raw := cluster.Client(t)
	ctx := ctxT(t, 20*time.Second)
	if _, err := raw.Put(ctx, admin.FloorKey(), "1e9"); err != nil {
		t.Fatal(err)
	}
	c := ns.newClient("a", testTTL)
	actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	l, err := c.Acquire(actx, "k")
	if err == nil {
		l.Release(ctx)
		t.Fatalf("granted token %d under a floor key holding %q", l.Token(), "1e9")
	}
	if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
		t.Fatalf("Acquire with a corrupt floor key = %v after %v; want ErrInvalidConfig at once, not ErrUnavailable retried until the deadline",
			err, time.Since(start).Round(time.Millisecond))
	}
}
