package redislock_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestWithMinTokenRepeatedKeepsHighest (red-team rt62c): options assembled from
// defaults and overrides — WithMinToken(M), then WithMinToken(0) — keep M, the offset
// the counter is seeded with (the clock in µs plus M); floors only go up.
func TestWithMinTokenRepeatedKeepsHighest(t *testing.T) {
	const min = 1 << 60
	n := newNamespace(t, redislock.WithMinToken(min), redislock.WithMinToken(0))
	ctx := ctxT(t, 10*locktest.NetworkTTL)
	c := lockclient.New(n.Backend("a"), lockclient.WithTTL(locktest.NetworkTTL))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() <= min {
		t.Fatalf("first token %d with WithMinToken(%d), WithMinToken(0); want above %d", l.Token(), uint64(min), uint64(min))
	}
}
