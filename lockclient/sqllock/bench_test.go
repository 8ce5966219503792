// The cost of one uncontended Acquire+Release on each server.

package sqllock_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// BenchmarkAcquireRelease measures one uncontended lockclient Acquire+Release on each
// server (two round trips: grant, release), connected directly.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			dsn, _ := srv.fresh(b, "")
			db := srv.open(b, dsn)
			be, err := sqllock.New(db)
			if err != nil {
				b.Fatal(err)
			}
			c := lockclient.New(be)
			defer c.Close(context.Background())
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.Acquire(ctx, "k")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
