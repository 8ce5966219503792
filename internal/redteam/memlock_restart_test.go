package redteam

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient"
)

// TestMemlockRestartProcedureEveryDatabase (red-team rt63a F1 on every backend, and the
// schedule that held): memlock's restart procedure — WithRestartSeed,
// WithMinToken(schema.MaxToken), the database floor raised to LastToken+1 before the
// first lease — on PostgreSQL, MariaDB and SQLite. Two starting points: the database's
// highest token below the clock (a deployment that always ran memlock: held — the
// earlier run's paused holder is refused on a row the new run wrote and on one it did
// not), and above the clock (after a switch from Redis or etcd, whose -retire answer
// carries 2^52: the restart seed's margin, not the clock, then puts the new run above
// the earlier run's granted tokens; with a seed at the clock alone the earlier run's
// paused holder wrote over the new run's holder).
func TestMemlockRestartProcedureEveryDatabase(t *testing.T) {
	for _, b := range []backend{postgresBackend(), mysqlBackend(), sqliteBackend()} {
		for _, aboveClock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/aboveClock=%v", b.name, aboveClock), func(t *testing.T) {
				d := freshDB(t, b, entry{})
				ctx := d.ctx
				fencetest.Guard(t, ctx, d.raw, b.dialect, schema.GuardSpec{Table: "accounts"})
				db, _ := d.open(true, nil)
				if aboveClock {
					// README "Switching or rebuilding the lock service", from Redis: NEXT ≈ the
					// Redis clock seed + lockclient.RetirementMargin; floor NEXT + 1.
					if err := schema.RaiseTokenFloor(ctx, d.raw, b.dialect, uint64(time.Now().UnixMicro())+lockclient.RetirementMargin+1); err != nil {
						t.Fatal(err)
					}
				}
				start := func() fencetest.MemlockRun {
					r := fencetest.StartMemlockRun(t, ctx, d.raw, b.dialect)
					if r.FloorErr != nil {
						t.Fatal(r.FloorErr)
					}
					return r
				}
				update := func(l *lockclient.Lease, id, bal int) error {
					_, err := db.ExecContext(fencedsql.WithLease(ctx, l), fmt.Sprintf("UPDATE accounts SET balance = %d WHERE id = %d", bal, id))
					return err
				}
				run1 := start()
				l := run1.Acquire(t, ctx, "account:1")
				if err := update(l, 1, 11); err != nil {
					t.Fatalf("run 1: %v", err)
				}
				l.Release(ctx)                               //nolint:errcheck
				paused1 := run1.Acquire(t, ctx, "account:1") // granted, paused before writing
				paused2 := run1.Acquire(t, ctx, "account:2")

				run2 := start()
				fresh1 := run2.Acquire(t, ctx, "account:1")
				if err := update(fresh1, 1, 100); err != nil {
					t.Fatalf("the restarted run's write (token %d): %v", fresh1.Token(), err)
				}
				if fresh1.Token() <= paused2.Token() {
					t.Errorf("the restarted run's first token %d is not above the earlier run's grants (%d, %d)", fresh1.Token(), paused1.Token(), paused2.Token())
				}
				if err := update(paused1, 1, -1); !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("fail-open: the earlier run's paused holder (token %d) on the row the restarted run wrote (token %d): %v; want ErrFenced", paused1.Token(), fresh1.Token(), err)
				}
				if err := update(paused2, 2, -1); !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("fail-open: the earlier run's paused holder (token %d) on a row the restarted run did not write (floor %d): %v; want ErrBelowFloor", paused2.Token(), fresh1.Token(), err)
				}
				var bal int
				if err := d.raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
					t.Errorf("account 1: balance %d, %v; want 100, the restarted run's", bal, err)
				}
			})
		}
	}
}
