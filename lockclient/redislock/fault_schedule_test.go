// A randomized fault schedule against redislock (from red-team pass rt53e, kept as a
// permanent check; the harness is internal/lockfaults). Three clients, each behind its
// own proxy, take one lock in turn while a scheduler stalls their connections (100 ms
// to 1.5 s, past the 600 ms TTL) and resets them; every write of a holder is checked
// against the lock key read directly.
//
// Knobs (internal/lockfaults, docs/design.md "Long forms"):
//
//	FENCEDSQL_SCHEDULES_DURATION=d  how long the schedule runs (default 3s)
//	FENCEDSQL_SCHEDULES_SEED=n      replay: the seed the test logs (default time-based)
//
// A long run: FENCEDSQL_SCHEDULES_DURATION=60s go test -count=1 -run
// TestFaultScheduleLeaseNeverHeldPastService ./lockclient/redislock/

package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/lockfaults"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// Under random stalls and resets of the clients' connections, a lease whose Err() is
// nil is held at Redis (the lock key names its token and owner), write tokens never go
// back, and Acquire and Release answer within their deadlines with typed errors
// (lockfaults.Schedule).
func TestFaultScheduleLeaseNeverHeldPastService(t *testing.T) {
	k := lockfaults.ReadKnobs(t, 3*time.Second)
	n := newNamespace(t, redislock.WithPollInterval(2*time.Millisecond, 20*time.Millisecond))
	admin := newClient(t, n.Target()) // bypasses the proxies
	keys := redislock.New(admin, redislock.WithPrefix(n.prefix))
	owners := []string{"w0", "w1", "w2"}
	var clients []*lockclient.Client
	for _, o := range owners {
		clients = append(clients, lockclient.New(n.backend(o), lockclient.WithTTL(600*time.Millisecond), lockclient.WithOwner(o)))
	}
	faults := lockfaults.Connections{G: n.Group, Owners: owners, Stall: [2]time.Duration{100 * time.Millisecond, 1500 * time.Millisecond}}
	lockfaults.Run(t, k, lockfaults.Schedule{
		Clients:         clients,
		Locks:           []string{"acct"},
		AcquireDeadline: [2]time.Duration{200 * time.Millisecond, time.Second},
		ReleaseDeadline: 500 * time.Millisecond,
		Slack:           700 * time.Millisecond,
		WriteGap:        150 * time.Millisecond,
		Holds: func(ctx context.Context, owner, lock string, l *lockclient.Lease) (bool, string, error) {
			v, err := admin.Get(ctx, keys.LockKey(lock)).Result()
			if errors.Is(err, redis.Nil) {
				return false, "no lock key", nil
			}
			if err != nil {
				return false, "", err
			}
			// The value is session:request:token:owner.
			parts := strings.SplitN(v, ":", 4)
			held := len(parts) == 4 && parts[2] == strconv.FormatUint(l.Token(), 10) && parts[3] == owner
			return held, fmt.Sprintf("%q", v), nil
		},
		Fault:    faults.Fault,
		FaultGap: 400 * time.Millisecond,
		Heal:     faults.Heal,
	})
}
