package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestCancelledSecondStatementRollbackToSavepointCommits (red-team rt56c F1): in the
// caller's transaction, after a SAVEPOINT, a DELETE the wrapper sends as two
// statements (the fencing UPDATE stamps rows #1 and #2, then the DELETE) waits for a
// blocker's lock on the tombstone table and is interrupted there. PostgreSQL aborts
// the transaction on every error it answers, so the caller's ROLLBACK TO SAVEPOINT
// undoes the stamp and the DELETE together; its next write and Commit then succeed
// (docs/design.md, dialect.TxAborter), whatever the SQLSTATE: lock_timeout (55P03),
// statement_timeout and pg_cancel_backend (both 57014, which the wrapper once took for
// no answer and broke the transaction for good, Commit refused NotCommitted).
func TestCancelledSecondStatementRollbackToSavepointCommits(t *testing.T) {
	e := openInterruptEnv(t)
	for _, kind := range []string{"locktimeout", "stmttimeout", "cancel"} {
		t.Run(kind, func(t *testing.T) {
			e.reset(t)
			pool := e.Pools[kind]
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			var pid int64
			if err := pool.QueryRowContext(ctx, e.SessionID).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			blocker, err := e.Raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer blocker.Rollback()
			if _, err := blocker.ExecContext(ctx, "LOCK TABLE fencedsql_tomb_accounts IN SHARE MODE"); err != nil {
				t.Fatal(err)
			}
			tx, err := pool.BeginTx(fencedsql.WithToken(ctx, e.Token()), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, "SAVEPOINT before_delete"); err != nil {
				t.Fatal(err)
			}
			if kind == "cancel" {
				go func() {
					for i := 0; i < 1000; i++ {
						var blocked bool
						_ = e.Raw.QueryRowContext(ctx, e.BlockedQuery, pid).Scan(&blocked)
						if blocked {
							_, _ = e.Raw.ExecContext(ctx, "SELECT pg_cancel_backend($1)", pid)
							return
						}
						time.Sleep(2 * time.Millisecond)
					}
				}()
			}
			_, opErr := tx.ExecContext(ctx, e.IDs(interruptDeleteSub))
			if opErr == nil {
				t.Fatal("the DELETE was not interrupted")
			}
			t.Logf("DELETE: %v", opErr)
			_ = blocker.Rollback()
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT before_delete"); err != nil {
				t.Fatalf("ROLLBACK TO SAVEPOINT: %v", err)
			}
			if _, err := tx.ExecContext(ctx, e.IDs(interruptCont)); err != nil {
				t.Fatalf("next write after ROLLBACK TO SAVEPOINT: %v", err)
			}
			err = tx.Commit()
			got := e.snap(t)
			if err != nil {
				t.Errorf("Commit after ROLLBACK TO SAVEPOINT refused (%s): %v\nstate %s", fencedsql.CommitOutcome(err), err, got)
			} else if !strings.Contains(got, "[1 100 t10 v1][2 100 t10 v1][3 1100 t20 v2]") {
				t.Errorf("committed state: %s", got)
			}
		})
	}
}
