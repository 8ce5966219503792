package mysql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestAggregateClaimRefusedBeforeSending (red-team rt19e F1): a locking read whose select
// list collapses its rows — `SELECT COUNT(*) … FOR UPDATE`, DISTINCT — returns rows
// that are not the rows it locks, so its claim cannot be counted against the stamp
// (TestAggregateClaimOverMovedRowRefused shows what that hid). Read with QueryRow
// such a claim went through uncounted until the count was judged on Close too, and
// was then refused with a reason blaming its condition. It is now refused by the
// planner, with a token, naming the aggregate or DISTINCT, before anything is sent:
// nothing stamped. A window aggregate (OVER) keeps its rows and is claimed.
func TestAggregateClaimRefusedBeforeSending(t *testing.T) {
	for _, c := range []struct{ sel, why string }{
		{"COUNT(*)", "aggregate (COUNT())"},
		{"SUM(balance)", "aggregate (SUM())"},
		{"DISTINCT owner", "DISTINCT"},
		{"DISTINCTROW owner", "DISTINCT"},
		{"COUNT(*) OVER ()", ""},
		{"(SELECT COUNT(*) FROM accounts a2 WHERE a2.id < 0)", ""},
	} {
		t.Run(c.sel, func(t *testing.T) {
			ctx, db, tx, _ := claimCountSetup(t)
			var v any
			err := tx.QueryRowContext(ctx, "SELECT "+c.sel+" FROM accounts WHERE owner = ? FOR UPDATE", "bob").Scan(&v)
			if c.why == "" {
				if err != nil {
					t.Fatalf("claim: %v", err)
				}
				return
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("claim: %v, want ErrUnsupported naming %s", err, c.why)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			var stamped int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE fence_token <> 0").Scan(&stamped); err != nil || stamped != 0 {
				t.Fatalf("%d rows stamped (err %v), want none", stamped, err)
			}
			// Without a token it is an ordinary locking read.
			plain, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Rollback() //nolint:errcheck
			if err := plain.QueryRowContext(ctx, "SELECT "+c.sel+" FROM accounts WHERE owner = ? FOR UPDATE", "bob").Scan(&v); err != nil {
				t.Fatalf("the same read without a token: %v", err)
			}
		})
	}
}

// TestAggregateClaimOverMovedRowRefused (fail-open of the count check): the count
// check exists so that a claimed read whose selection differs from its fencing
// UPDATE's ("a column the database updates on every UPDATE", here MySQL's ON UPDATE
// CURRENT_TIMESTAMP) is never kept. Its row-wise form is refused: `SELECT id FROM
// accounts WHERE id = ? AND updated_at = '2000-01-01' FOR UPDATE` stamps row 1, which
// moves updated_at, its read then finds nothing, and 0 rows against 1 stamped breaks
// the transaction (the control subtest). Under an aggregate the read always returns
// one row: the same condition with COUNT(*) stamps the row, reads COUNT = 0 — the row
// it matched and stamped is reported absent — and one row against one stamped passes:
// the caller acts on "no such row" and Commit keeps the stamp. (With 5009a7e the same
// aggregate over 0 or 3 rows is refused: the check judges the aggregate's output, not
// its input.) Right behaviour: a claimed read whose select list aggregates (COUNT,
// SUM, … without GROUP BY; DISTINCT) cannot be counted against the stamp and is
// refused by the planner (or counted on its input); never accepted on the row count
// of its output.
func TestAggregateClaimOverMovedRowRefused(t *testing.T) {
	for _, sel := range []string{"id", "COUNT(*)"} {
		t.Run(sel, func(t *testing.T) {
			ctx, _, tx, _ := claimCountSetup(t, "ALTER TABLE accounts ADD COLUMN updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)")
			var n int64
			err := tx.QueryRowContext(ctx, "SELECT "+sel+" FROM accounts WHERE id = ? AND updated_at = '2000-01-01 00:00:00' FOR UPDATE", 1).Scan(&n)
			if err != nil {
				if errors.Is(err, fencedsql.ErrUnsupported) {
					t.Logf("refused: %v", err)
					return // refused: the right behaviour
				}
				t.Fatalf("claim: %v", err)
			}
			cerr := tx.Commit()
			t.Fatalf("the claim stamped row 1 (updated_at 2000-01-01) and its read returned %d; Commit: %v — the row-wise read of the same statement is refused by the count check", n, cerr)
		})
	}
}
