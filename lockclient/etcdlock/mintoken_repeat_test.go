package etcdlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
)

// TestWithMinTokenRepeatedKeepsHighest (red-team rt62c): options assembled from
// defaults and overrides — WithMinToken(M), then WithMinToken(0) — keep M, the offset
// a fresh prefix is seeded with (the clock in µs plus M); floors only go up.
func TestWithMinTokenRepeatedKeepsHighest(t *testing.T) {
	t.Parallel()
	const min = 1 << 55 // above the clock in µs: a seed at the clock alone is below it
	cli := etcdtest.StartSingle(t).Client(t)
	ctx := ctxT(t, 30*time.Second)
	b := etcdlock.New(cli, etcdlock.WithPrefix(uniquePrefix(t)), etcdlock.WithMinToken(min), etcdlock.WithMinToken(0))
	c := lockclient.New(b, lockclient.WithTTL(testTTL))
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
