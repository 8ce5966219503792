package postgres_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A red-team pass: spellings of a locking read through a view over a guarded table that the
// planner's relation list (plan.lockThrough) does not name: PostgreSQL's
// "ONLY (name)" form, a parenthesised join, U&-escaped names. Each one locks
// accounts' rows with a token and nothing claims them; each must be refused.
func TestLockingReadThroughViewSpellings(t *testing.T) {
	raw, db, ctx := lockViewEnv(t)
	for _, q := range []string{
		`SELECT id, balance FROM ONLY (av) WHERE id = 1 FOR UPDATE`,
		`SELECT o.id FROM other o JOIN ONLY (av) a ON a.id = o.id WHERE o.id = 1 FOR UPDATE`,
		`SELECT a.id FROM (av a CROSS JOIN other o) WHERE a.id = 1 AND o.id = 1 FOR UPDATE`,
		`SELECT id, balance FROM U&"av" WHERE id = 1 FOR UPDATE`,
		`SELECT id, balance FROM U&"\0061v" WHERE id = 1 FOR UPDATE`,
		`TABLE ONLY (av) FOR UPDATE`,
	} {
		tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, q)
		if err == nil {
			rows.Close()
			// The server locked accounts row 1 for this holder, unclaimed.
			_, lerr := raw.ExecContext(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE NOWAIT")
			t.Errorf("%s with a token: accepted (row 1 locked by it: %v), want ErrUnsupported", q, lerr != nil)
		} else if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s with a token: %v, want ErrUnsupported", q, err)
		}
		_ = tx.Rollback()
	}
}
