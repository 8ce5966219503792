package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestCompletionTypeSetByRoutine: a stored function called from a plain SELECT sets
// completion_type = CHAIN after the session check passed (red-team rt10f F3). A COMMIT
// or ROLLBACK then opened a new transaction the wrapper did not know of, and the pooled
// connection's later autocommit writes were acknowledged and never committed. The
// wrapper ends its transactions (the caller's, and its own around a two-statement
// DELETE) with COMMIT/ROLLBACK AND NO CHAIN NO RELEASE: every write reported done is
// visible to another session.
func TestCompletionTypeSetByRoutine(t *testing.T) {
	for _, end := range []string{"Commit", "Rollback", "OwnDelete"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQL(t)
			raw := testdb.Open(t, "mysql", dsn,
				"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO accounts (id, balance) VALUES (1, 5), (2, 5), (3, 5)",
				"CREATE FUNCTION chain() RETURNS INT BEGIN SET completion_type = 1; RETURN 1; END")
			fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
			fenced.SetMaxOpenConns(1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tctx := fencedsql.WithToken(ctx, 10)
			if _, err := fenced.ExecContext(tctx, "UPDATE accounts SET balance = 6 WHERE id = 1"); err != nil {
				t.Fatal(err) // the session check passes here
			}
			var one int
			if err := fenced.QueryRowContext(ctx, "SELECT chain()").Scan(&one); err != nil {
				t.Fatal(err)
			}
			switch end {
			case "OwnDelete":
				// No guard installed: the DELETE runs as two statements in the wrapper's
				// own transaction, which it commits.
				if _, err := fenced.ExecContext(tctx, "DELETE FROM accounts WHERE id = 3"); err != nil {
					t.Fatal(err)
				}
			default:
				tx, err := fenced.BeginTx(tctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 7 WHERE id = 3"); err != nil {
					t.Fatal(err)
				}
				if end == "Commit" {
					err = tx.Commit()
				} else {
					err = tx.Rollback()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if _, err := fenced.ExecContext(tctx, "UPDATE accounts SET balance = 42 WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			var bal int64
			if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 2").Scan(&bal); err != nil || bal != 42 {
				t.Fatalf("another session reads balance %d (err %v) after the acknowledged write of 42: the write is in a transaction that was never committed", bal, err)
			}
			var inTx int
			if err := fenced.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&inTx); err != nil || inTx != 0 {
				t.Errorf("the pooled session is inside a transaction (%d, err %v) after an autocommit write", inTx, err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 3").Scan(&n); err != nil || (end == "OwnDelete") != (n == 0) {
				t.Errorf("row 3: %d rows (err %v) after %s", n, err, end)
			}
		})
	}
}
