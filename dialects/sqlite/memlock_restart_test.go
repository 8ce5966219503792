package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestMemlockSingleInstanceRestart (red-team rt59c F3): a single instance on memlock
// restarts (a deploy, a crash). memlock keeps its counter in memory, so a
// memlock.New() of the second run counts from 1 again, below the tokens the first run
// stamped on its rows, and the instance — the only holder — is refused its own rows
// (ErrFenced; never a silent write). The README's procedure for a single instance
// starts the service above every token the database holds:
// memlock.New(memlock.WithMinToken(schema.MaxToken(…))); the restarted instance then
// writes, and a token of the first run is still refused.
func TestMemlockSingleInstanceRestart(t *testing.T) {
	dsn := testdb.SQLite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := testdb.Open(t, "sqlite", dsn, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance) VALUES (1, 0)")
	db := testdb.Open(t, "fenced-sqlite", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	// run starts an instance on svc, takes the lock n times and writes under each lease;
	// it returns the last lease's token and the first error.
	run := func(svc *memlock.Service, n int) (uint64, error) {
		locks := lockclient.New(svc, lockclient.WithTTL(5*time.Second))
		defer locks.Close(context.Background()) //nolint:errcheck
		var tok uint64
		for i := 0; i < n; i++ {
			l, err := locks.Acquire(ctx, "account:1")
			if err != nil {
				t.Fatal(err)
			}
			tok = l.Token()
			_, err = db.ExecContext(fencedsql.WithLease(ctx, l), "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
			l.Release(ctx) //nolint:errcheck
			if err != nil {
				return tok, err
			}
		}
		return tok, nil
	}
	firstLast, err := run(memlock.New(), 5)
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	// Restarted without a floor: refused, typed.
	if _, err := run(memlock.New(), 1); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("a restart counting from 1 again: %v; want ErrFenced (the rows carry the first run's tokens)", err)
	}
	// Restarted as the README says: above every token the database holds.
	max, err := schema.MaxToken(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if max != firstLast {
		t.Errorf("MaxToken %d; want the first run's last token %d", max, firstLast)
	}
	tok, err := run(memlock.New(memlock.WithMinToken(max)), 2)
	if err != nil || tok <= max {
		t.Errorf("a restart with WithMinToken(MaxToken %d): token %d, %v; want tokens above it, writing", max, tok, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, firstLast), "UPDATE accounts SET balance = 0 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("a late write of the first run (token %d) after the restart: %v; want ErrFenced", firstLast, err)
	}
}

// TestMemlockRestartRefusesPreviousRunsGrants (red-team rt62c F1, rt63a F1): the tokens
// a run granted that have not written yet are above every token the database holds, so
// a restart that only starts above schema.MaxToken hands them out again; the previous
// run's holder (paused, partitioned, or the old process still running in a deploy's
// overlap) then writes over the new holder's row. The procedure of memlock's doc:
// WithRestartSeed and WithMinToken(MaxToken), then the database's floor raised to the
// new service's LastToken + 1. The new run's tokens are above the old run's, the old
// run's paused holder is refused on the row the new run wrote (the row's token) and on
// a row it did not (the floor), and the new run writes — also when the database's floor
// is far above the clock (what a switch from Redis or etcd leaves: the clock then
// separates no runs, the margin does).
func TestMemlockRestartRefusesPreviousRunsGrants(t *testing.T) {
	for _, aboveClock := range []bool{false, true} {
		t.Run(fmt.Sprintf("floorAboveClock=%v", aboveClock), func(t *testing.T) {
			memlockRestartRefusesPreviousRunsGrants(t, aboveClock)
		})
	}
}

func memlockRestartRefusesPreviousRunsGrants(t *testing.T, aboveClock bool) {
	dsn := testdb.SQLite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := testdb.Open(t, "sqlite", dsn, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0)")
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if aboveClock {
		if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, uint64(time.Now().UnixMicro())+lockclient.RetirementMargin); err != nil {
			t.Fatal(err)
		}
	}
	db := testdb.Open(t, "fenced-sqlite", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	update := func(l *lockclient.Lease, id int, bal int) error {
		_, err := db.ExecContext(fencedsql.WithLease(ctx, l), "UPDATE accounts SET balance = ? WHERE id = ?", bal, id)
		return err
	}
	// start starts a run by the procedure.
	start := func() fencetest.MemlockRun {
		r := fencetest.StartMemlockRun(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
		if r.FloorErr != nil {
			t.Fatal(r.FloorErr)
		}
		return r
	}
	acquire := func(r fencetest.MemlockRun, key string) *lockclient.Lease {
		l := r.Acquire(t, ctx, key)
		t.Cleanup(func() { l.Release(context.Background()) }) //nolint:errcheck
		return l
	}
	run1 := start()
	for i := 0; i < 3; i++ {
		l := acquire(run1, "account:1")
		if err := update(l, 1, i); err != nil {
			t.Fatalf("run 1: %v", err)
		}
		l.Release(ctx) //nolint:errcheck
	}
	paused1 := acquire(run1, "account:1") // granted, paused before its write
	paused2 := acquire(run1, "account:2")

	run2 := start()
	fresh := acquire(run2, "account:1")
	if fresh.Token() <= paused2.Token() {
		t.Fatalf("the restarted service's token %d is not above the previous run's grants (%d, %d)", fresh.Token(), paused1.Token(), paused2.Token())
	}
	if err := update(fresh, 1, 100); err != nil {
		t.Fatalf("the restarted instance's write: %v", err)
	}
	if err := update(paused1, 1, 0); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("the previous run's paused holder (token %d) on the row the new run wrote: %v; want ErrFenced", paused1.Token(), err)
	}
	if err := update(paused2, 2, 0); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("the previous run's paused holder (token %d) on a row the new run did not write: %v; want ErrBelowFloor", paused2.Token(), err)
	}
	var bal int
	if err := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
		t.Errorf("account 1: balance %d, %v; want 100, the new run's", bal, err)
	}
}
