package testdb

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// PostgresBackendPID returns the PostgreSQL backend process ID of the session that
// runs q on tx (the transaction's connection).
func PostgresBackendPID(t testing.TB, ctx context.Context, tx *sql.Tx) int {
	t.Helper()
	var pid int
	if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatalf("SELECT pg_backend_pid(): %v", err)
	}
	return pid
}

// WaitPostgresBlockedBy waits until some session of db's server waits for a lock that
// the backend blocker holds, and reports true; it reports false as soon as done is
// closed or receives first (the statement expected to wait ended without waiting).
// It waits up to a minute, the time a loaded CI machine may take to start the
// waiting statement, and fails t after that. Tests use it instead of a fixed sleep:
// a sleep that is long enough on a laptop is too short on two loaded cores, and the
// test then checks a statement that never waited.
func WaitPostgresBlockedBy(t testing.TB, ctx context.Context, db *sql.DB, blocker int, done <-chan struct{}) bool {
	t.Helper()
	const q = "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))"
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var n int
		if err := db.QueryRowContext(ctx, q, blocker).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if n > 0 {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("no session waited for backend %d's locks within a minute", blocker)
	return false
}
