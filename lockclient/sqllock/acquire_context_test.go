package sqllock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// lostLease is a fencing lease its holder already lost.
type lostLease struct{ lost chan struct{} }

func (l lostLease) Token() uint64         { return 7 }
func (l lostLease) Lost() <-chan struct{} { return l.lost }
func (l lostLease) Err() error            { return lockclient.ErrLeaseLost }

// The lease table in the fenced database, reached through a fenced pool, and Acquire or
// TryAcquire of a second lock given a context bound to a lease that is lost (work
// under lock A that then needs lock B, after A's lease ended): the grant's statements
// are the lock service's, not the caller's, and must not be refused for A's lease.
// Before, the wrapper refused them ("statement not sent, its lease was lost") and the
// grant failed with ErrLeaseLost.
func TestAcquireUnderLostLeaseThroughFencedPool(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			db, be := backendOnFencedPool(t, srv)
			c := lockclient.New(be, lockclient.WithOwner("a"), lockclient.WithTTL(10*time.Second))
			t.Cleanup(func() { c.Close(context.Background()) })
			ctx := ctxT(t, 30*time.Second)
			lost := lostLease{lost: make(chan struct{})}
			close(lost.lost)
			bound := fencedsql.WithLease(ctx, lost)
			if _, err := db.ExecContext(bound, "SELECT 1"); !errors.Is(err, lockclient.ErrLeaseLost) {
				t.Fatalf("a statement of the caller's under the lost lease = %v, want ErrLeaseLost (the set-up is wrong)", err)
			}
			for _, try := range []struct {
				name string
				get  func(context.Context, string) (*lockclient.Lease, error)
			}{{"TryAcquire", c.TryAcquire}, {"Acquire", c.Acquire}} {
				l, err := try.get(bound, "b-"+try.name)
				if err != nil {
					t.Fatalf("%s under a context bound to a lost lease = %v, want a grant: the lock service's statements were refused for the caller's lease", try.name, err)
				}
				if err := l.Release(bound); err != nil {
					t.Fatalf("Release: %v", err)
				}
			}
		})
	}
}
