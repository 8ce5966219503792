package fencetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// ThreeLeases acquires three leases of svc, on the keys name:1, name:2 and name:3 under
// owners of their own, in that order: their tokens rise, l1 < l2 < l3 (a token between
// two others lets a test tell "fenced below l3" from "fenced at l3"). The clients are
// closed when t ends.
func ThreeLeases(t testing.TB, svc lockclient.Backend, name string) (l1, l2, l3 *lockclient.Lease) {
	t.Helper()
	ctx := context.Background()
	var ls []*lockclient.Lease
	for i := 1; i <= 3; i++ {
		c := lockclient.New(svc, lockclient.WithTTL(time.Minute), lockclient.WithOwner(fmt.Sprintf("%s-%d", name, i)))
		t.Cleanup(func() { _ = c.Close(ctx) })
		l, err := c.Acquire(ctx, fmt.Sprintf("%s:%d", name, i))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	return ls[0], ls[1], ls[2]
}
