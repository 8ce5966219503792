// The first contact with a stalled Redis (from red-team pass rt53e, kept as a permanent
// check; the harness is internal/lockfaults).
//
//	go test -count=1 -run TestFirstContactStalledReturnsTypedErrorInTime ./lockclient/redislock/

package redislock_test

import (
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/lockfaults"
	"github.com/fencedsql/fencedsql/lockclient"
)

// A client whose Redis is stalled before its first request — the Backend's first Open
// (eviction policy check, service identity, token seed) runs inside Acquire — answers
// Acquire, TryAcquire and Close within a 400 ms deadline (+ 600 ms) with
// ErrUnavailable or the deadline, and leaves no goroutine behind once healed (goleak in
// TestMain).
func TestFirstContactStalledReturnsTypedErrorInTime(t *testing.T) {
	n := newNamespace(t)
	c := lockclient.New(n.backend("a"), lockclient.WithTTL(time.Second), lockclient.WithOwner("a"))
	n.Pause("a")
	defer n.Resume("a")
	lockfaults.FirstContactStalled(t, c, 400*time.Millisecond, 600*time.Millisecond)
}
