package sqlite_test

import (
	"context"
	"errors"
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
