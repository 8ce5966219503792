// A randomized fault schedule against sqllock on PostgreSQL and MariaDB (from red-team
// pass rt53e, kept as a permanent check; the harness is internal/lockfaults). Three
// clients, each through its own proxy, take one lock in turn while a scheduler stalls
// their connections (200 ms to 2.2 s, past the 1 s TTL) and resets them at random
// points of the grant and renewal traffic; every write of a holder is checked against
// the lease table read directly.
//
// Knobs (internal/lockfaults, docs/design.md "Long forms"):
//
//	FENCEDSQL_SCHEDULES_DURATION=d  how long each server's schedule runs (default 1.5s)
//	FENCEDSQL_SCHEDULES_SEED=n      replay: the seed the test logs (default time-based)
//
// A long run: FENCEDSQL_SCHEDULES_DURATION=60s go test -count=1 -run
// TestFaultScheduleLeaseNeverHeldPastService ./lockclient/sqllock/

package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/lockfaults"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// Under random stalls and resets of the clients' connections, a lease whose Err() is
// nil is the key's live row at the server's clock (its token, its owner), write tokens
// never go back, and Acquire and Release answer within their deadlines with typed
// errors (lockfaults.Schedule).
func TestFaultScheduleLeaseNeverHeldPastService(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		k := lockfaults.ReadKnobs(t, 1500*time.Millisecond)
		n := newNamespace(t, srv)
		admin := srv.open(t, n.dsn) // bypasses the proxies
		q := "SELECT token, owner FROM " + sqllock.DefaultTable + " WHERE lock_key = ? AND expires_at > "
		if srv.dialect == sqllock.Postgres {
			q = strings.Replace(q, "?", "$1", 1) + "clock_timestamp()"
		} else {
			q += "UTC_TIMESTAMP(6)"
		}
		owners := []string{"w0", "w1", "w2"}
		var clients []*lockclient.Client
		for _, o := range owners {
			clients = append(clients, lockclient.New(n.backend(o, nil), lockclient.WithTTL(time.Second), lockclient.WithOwner(o)))
		}
		faults := lockfaults.Connections{G: n.Group, Owners: owners, Stall: [2]time.Duration{200 * time.Millisecond, 2200 * time.Millisecond}}
		lockfaults.Run(t, k, lockfaults.Schedule{
			Clients:         clients,
			Locks:           []string{"acct"},
			AcquireDeadline: [2]time.Duration{300 * time.Millisecond, 1200 * time.Millisecond},
			ReleaseDeadline: 700 * time.Millisecond,
			Slack:           1500 * time.Millisecond,
			WriteGap:        200 * time.Millisecond,
			Holds: func(ctx context.Context, owner, lock string, l *lockclient.Lease) (bool, string, error) {
				var tok int64
				var who string
				err := admin.QueryRowContext(ctx, q, lock).Scan(&tok, &who)
				if errors.Is(err, sql.ErrNoRows) {
					return false, "no live row", nil
				}
				if err != nil {
					return false, "", err
				}
				return uint64(tok) == l.Token() && who == owner, fmt.Sprintf("the live row of token %d, owner %q", tok, who), nil
			},
			Fault:    faults.Fault,
			FaultGap: 500 * time.Millisecond,
			Heal:     faults.Heal,
		})
	})
}
