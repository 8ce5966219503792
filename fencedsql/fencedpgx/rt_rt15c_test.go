package fencedpgx_test

// Red-team rt15c (failed on e10017f): a LIMIT after the locking clause is refused
// before sending, never dropped.

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestRT15cQueryRowLimitAfterLockStampsAll: fencedpgx Tx.QueryRow (and a batch) of a
// locking read whose LIMIT follows its locking clause (`… FOR UPDATE LIMIT 1`, valid
// PostgreSQL): the caller gets one row, but the claim dropped the LIMIT and stamped and
// locked every matching row (rt15c F1).
func TestRT15cQueryRowLimitAfterLockStampsAll(t *testing.T) {
	const read = `SELECT id, balance FROM accounts WHERE balance = $1 ORDER BY id FOR UPDATE LIMIT 1`
	for _, via := range []string{"QueryRow", "Batch"} {
		t.Run(via, func(t *testing.T) {
			ctx, raw, db := freshPG(t, plainAccounts)
			for _, id := range []int64{1, 2, 3} {
				if _, err := db.Exec(tok(ctx, 2), "INSERT INTO accounts (id, balance) VALUES ($1, 0)", id); err != nil {
					t.Fatal(err)
				}
			}
			var got []int64
			switch via {
			case "QueryRow":
				tx, err := db.Begin(tok(ctx, 10))
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				var id, bal int64
				if err := tx.QueryRow(tok(ctx, 10), read, 0).Scan(&id, &bal); err != nil {
					if errors.Is(err, fencedsql.ErrUnsupported) {
						return // refused before sending: nothing stamped, nothing locked
					}
					t.Fatalf("claim: %v", err)
				}
				got = []int64{id}
				var n int64
				if err := tx.QueryRow(ctx, "SELECT count(*) FROM accounts WHERE fence_token = 10").Scan(&n); err != nil {
					t.Fatal(err)
				}
				t.Logf("QueryRow returned %v; rows stamped with token 10: %d", got, n)
				if n != 1 {
					t.Errorf("QueryRow of a LIMIT 1 read returned row %v and stamped %d rows with the token", got, n)
				}
				// rows 2 and 3 are locked too
				for _, other := range []int64{2, 3} {
					if _, err := raw.Exec(ctx, "SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE NOWAIT", other); err != nil {
						t.Errorf("row %d, which the LIMIT 1 read did not return, is locked by the claim: %v", other, err)
					}
				}
			case "Batch":
				ids, err := batchRead(tok(ctx, 10), db, read, 0)
				var n int64
				if qerr := raw.QueryRow(ctx, "SELECT count(*) FROM accounts WHERE fence_token = 10").Scan(&n); qerr != nil {
					t.Fatal(qerr)
				}
				t.Logf("batch returned %v err %v; rows stamped with token 10 (committed): %d", ids, err, n)
				if err == nil && (len(ids) != 1 || n != 1) {
					t.Errorf("batch of a LIMIT 1 read returned %v and stamped %d rows with the token", ids, n)
				}
			}
		})
	}
}
