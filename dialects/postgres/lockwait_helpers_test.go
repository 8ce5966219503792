package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// awaitLockWait polls, on db's database, until a statement of another session waits
// for a row lock held by an open transaction (pg_stat_activity: wait_event_type 'Lock',
// wait_event 'transactionid' or 'tuple'; not a table or advisory lock), or done is
// closed (the statement ended without waiting), or maxWait passed; it reports whether
// the wait was seen. It replaces a fixed sleep ("B's statement now waits for A's
// rows"), too long on an idle machine and too short on a loaded one: B not yet waiting
// when A committed is another interleaving than the one the test means. Each test has
// its own database (testdb.Postgres), so no other test's waits are counted.
func awaitLockWait(t *testing.T, ctx context.Context, db *sql.DB, done <-chan struct{}, maxWait time.Duration) bool {
	t.Helper()
	const q = `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`
	deadline := time.Now().Add(maxWait)
	for {
		var n int
		if err := db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatalf("polling pg_stat_activity for a lock wait: %v", err)
		}
		if n > 0 {
			return true
		}
		select {
		case <-done:
			return false
		default:
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
