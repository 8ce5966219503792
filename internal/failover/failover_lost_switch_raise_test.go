package failover

import (
	"context"
	"database/sql"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestFailoverLosesLockServiceSwitchRaise (red-team rt59c F2, asynchronous-failover
// form): as TestSQLLockInFailedOverDatabaseJumpsLostTokens, but the lost tail of the
// replication also holds the lock-service switch's raise of sqllock's floor (its
// "lockfloor -raise max(N, OLD)", OLD a retired Redis or etcd service's answer, last +
// 2^52, here 2^52), whose answer the operator recorded outside the database. The
// failover hook as deployed — deploy/failover/raise-floor.sh, FENCEDSQL_LOCKFLOOR_ARGS
// naming sqllock on the new primary, FENCEDSQL_FLOOR_AT_LEAST the recorded answer —
// lifts sqllock above it: the tokens tA, tB granted on the old primary after the raise
// are refused on the new primary (an UPDATE, and the re-insert of a row deleted under
// tB), and sqllock's next grant is above them and writes. Before the fix the hook
// raised sqllock only to its promoted LastToken + 2^32: tA's writes were accepted and
// the new holder was fenced by them. (Without the recorded answer nothing left on the
// new primary shows the raise: the open finding, design.md.)
func TestFailoverLosesLockServiceSwitchRaise(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	env := needEnv(t)
	bctx, bcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer bcancel()
	hookEnv := hookBinaries(bctx, t)
	// hook runs raise-floor.sh DRIVER on the pair's new primary for sqllock -backend
	// backend and returns the floor it raised − 1.
	hook := func(ctx context.Context, t *testing.T, pair Pair, driver, backend string, d DB) func(*sql.DB, *sqllock.Backend, uint64) uint64 {
		return func(np *sql.DB, _ *sqllock.Backend, answer uint64) uint64 {
			env := append(append([]string{}, hookEnv...), "FENCEDSQL_FLOOR_DSN="+pair.DSN(), "FENCEDSQL_LOCK_DSN="+pair.DSN(),
				"FENCEDSQL_LOCKFLOOR_ARGS=-backend "+backend+" -dsn-env FENCEDSQL_LOCK_DSN",
				"FENCEDSQL_FLOOR_AT_LEAST="+strconv.FormatUint(answer, 10))
			out, code := runHook(t, env, "raise-floor.sh", driver)
			if code != 0 {
				t.Fatalf("raise-floor.sh on the new primary: exit %d\n%s", code, out)
			}
			floor, err := schema.TokenFloor(ctx, np, d.Dialect)
			if err != nil {
				t.Fatal(err)
			}
			return floor - 1
		}
	}
	t.Run("PostgreSQL", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pair, err := NewPostgres(ctx, env, Async)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pair.Close() })
		sqllockLostTail(ctx, t, pair, pgDB, sqllock.Postgres, pair.replica.dsn(), pair.replica.srv, 1<<52,
			hook(ctx, t, pair, "postgres", "postgres", pgDB))
	})
	t.Run("MariaDB", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		pair := asyncMariaDBPair(t, ctx, env)
		sqllockLostTail(ctx, t, pair, myDB, sqllock.MySQL, pair.replica.dsn(mariaDBDatabase), pair.replica.srv, 1<<52,
			hook(ctx, t, pair, "mysql", "mysql", myDB))
	})
}
