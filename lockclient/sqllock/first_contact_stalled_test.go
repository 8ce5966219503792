// The first contact with a stalled lease database (from red-team pass rt53e, kept as a
// permanent check; the harness is internal/lockfaults).
//
//	go test -count=1 -run TestFirstContactStalledReturnsTypedErrorInTime ./lockclient/sqllock/

package sqllock_test

import (
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/lockfaults"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// A client whose lease database is stalled before its first statement — the
// Backend's first grant runs its token-source and replication checks — answers
// Acquire, TryAcquire and Close within a 400 ms deadline (+ 1.5 s) with ErrUnavailable
// or the deadline (the pool is not warmed up: no connection is open before the stall).
func TestFirstContactStalledReturnsTypedErrorInTime(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		n := newNamespace(t, srv)
		b, err := sqllock.New(n.db("a", nil))
		if err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(b, lockclient.WithTTL(time.Second), lockclient.WithOwner("a"))
		n.Pause("a")
		defer n.Resume("a")
		lockfaults.FirstContactStalled(t, c, 400*time.Millisecond, 1500*time.Millisecond)
	})
}
