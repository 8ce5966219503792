package redteam

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/lockclient"
)

// TestMemlockRestartWithoutDatabaseFloor (red-team rt64a F1): memlock's restart
// procedure on tables fenced by the wrapper alone (no guard, so no floor to raise). A run
// that grants and writes nothing leaves schema.MaxToken where it was; a seed of MaxToken
// plus a margin then repeated the earlier run's seed, and its paused holder wrote over
// the new run's honest holder with an equal token. With the floor below the clock the
// restart seed is the clock, which separates the runs.
func TestMemlockRestartWithoutDatabaseFloor(t *testing.T) {
	for _, b := range []backend{sqliteBackend(), postgresBackend()} {
		t.Run(b.name, func(t *testing.T) {
			d := freshDB(t, b, entry{})
			ctx := d.ctx
			db, _ := d.open(true, nil) // wrapper-only fencing: no guard installed
			spec := schema.GuardSpec{Table: "accounts"}
			start := func() fencetest.MemlockRun {
				r := fencetest.StartMemlockRun(t, ctx, d.raw, b.dialect, spec)
				// The procedure's floor step applies only "where the guards read a floor":
				// here it is refused as there is none.
				if r.FloorErr == nil {
					t.Fatalf("RaiseTokenFloor with no guard succeeded")
				}
				return r
			}
			update := func(l *lockclient.Lease, id, bal int) error {
				_, err := db.ExecContext(fencedsql.WithLease(ctx, l), fmt.Sprintf("UPDATE accounts SET balance = %d WHERE id = %d", bal, id))
				return err
			}
			// Run 0: a normal run that writes.
			run0 := start()
			l0 := run0.Acquire(t, ctx, "account:1")
			if err := update(l0, 1, 10); err != nil {
				t.Fatalf("run 0: %v", err)
			}
			l0.Release(ctx) //nolint:errcheck
			// Run 1: grants, writes nothing yet (paused holder), then the process is replaced.
			run1 := start()
			var paused []*lockclient.Lease
			for i := 0; i < 3; i++ {
				paused = append(paused, run1.Acquire(t, ctx, fmt.Sprintf("account:%d", 2+i)))
			}
			// Run 2: the restart.
			run2 := start()
			fresh := run2.Acquire(t, ctx, "account:4") // the key run 1's third paused holder holds
			t.Logf("seeds: run0 %d, run1 %d, run2 %d; run1 paused tokens %d,%d,%d; run2 first token %d",
				run0.Seed, run1.Seed, run2.Seed, paused[0].Token(), paused[1].Token(), paused[2].Token(), fresh.Token())
			if fresh.Token() <= paused[2].Token() {
				t.Errorf("the restarted run's first token %d is not above the earlier run's grants (up to %d): seed %d = the earlier run's seed %d", fresh.Token(), paused[2].Token(), run2.Seed, run1.Seed)
			}
			if err := update(fresh, 4, 100); err != nil {
				t.Fatalf("the restarted run's honest write (token %d): %v", fresh.Token(), err)
			}
			if err := update(paused[2], 4, -1); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("fail-open: the earlier run's paused holder of account:4 (token %d) wrote over the restarted run's holder (token %d): err %v; want ErrFenced", paused[2].Token(), fresh.Token(), err)
			}
			if err := update(fresh, 4, 101); err != nil {
				t.Errorf("fail-closed: the restarted run's honest holder (token %d) is refused after the straggler's write: %v", fresh.Token(), err)
			}
			var bal int
			if err := d.raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 4").Scan(&bal); err != nil || bal != 101 {
				t.Errorf("account 4: balance %d, %v; want 101, the restarted run's", bal, err)
			}
		})
	}
}
