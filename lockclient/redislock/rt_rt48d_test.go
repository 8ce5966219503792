package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestRTrt48dF1GrantThroughWritableReplicaRefused (red-team rt48d F1): LastToken,
// RaiseFloor and Retire refuse a writable replica (replica-read-only no: INFO's role),
// but the grant script has no such check. A Backend pointed at a writable replica (a
// Sentinel-demoted old primary that kept replica-read-only no, a reader endpoint, a
// misrouted address) INCRs the replica's copy of the counter and SETs the replica's copy
// of the lock key: neither reaches the primary. The primary then grants the same lock,
// with the same token, to another holder: two holders of one lock at once, neither
// token above the other, and the guarded database (which refuses only a token below the
// row's) accepts the writes of both.
//
// Right behaviour: a grant through a server that is not the primary fails with an
// error wrapping lockclient.ErrUnavailable, as LastToken/RaiseFloor/Retire do.
func TestRTrt48dF1GrantThroughWritableReplicaRefused(t *testing.T) {
	primary := ownRedis(t, "--repl-diskless-sync-delay", "0")
	replica := ownRedis(t, "--replicaof", "127.0.0.1", portOf(t, primary), "--replica-read-only", "no")
	ctx := ctxT(t, 20*time.Second)
	p := newClient(t, primary)
	r := newClient(t, replica)
	const prefix = "rt48d-wr:"
	bp := redislock.New(p, redislock.WithPrefix(prefix))
	br := redislock.New(r, redislock.WithPrefix(prefix))
	cp := lockclient.New(bp, lockclient.WithTTL(5*time.Second))
	defer cp.Close(context.Background())
	cr := lockclient.New(br, lockclient.WithTTL(5*time.Second))
	defer cr.Close(context.Background())

	l1, err := cp.Acquire(ctx, "rt48d:account:1")
	if err != nil {
		t.Fatal(err)
	}
	_ = l1.Release(ctx)
	for { // the replica has the counter and the release
		v, err := r.Get(ctx, bp.TokenKey()).Uint64()
		n, _ := r.Exists(ctx, prefix+"rt48d:account:1").Result()
		if err == nil && v == l1.Token() && n == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("replica never synced: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A process configured with the replica's address takes the lock there.
	lr, err := cr.TryAcquire(ctx, "rt48d:account:1")
	if errors.Is(err, lockclient.ErrUnavailable) {
		return // fixed: the replica grants nothing
	}
	if err != nil {
		t.Fatalf("grant through a writable replica = %v; want an error wrapping ErrUnavailable", err)
	}
	// The primary knows nothing of it: it grants the same lock to another holder.
	lp, err := cp.TryAcquire(ctx, "rt48d:account:1")
	if err != nil {
		t.Fatalf("grant through a writable replica succeeded (token %d) and the primary refused the next: %v; want ErrUnavailable from the replica", lr.Token(), err)
	}
	t.Fatalf("grant through a writable replica (replica-read-only no) succeeded with token %d, while the primary granted the same lock at once to another holder with token %d "+
		"(two live holders, the replica's token not below the primary's): want ErrUnavailable from the replica's grant, as LastToken/RaiseFloor/Retire give",
		lr.Token(), lp.Token())
}
