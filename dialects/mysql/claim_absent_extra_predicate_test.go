package mysql_test

import (
	"database/sql"
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimWithExtraPredicateOnExistingRowReadsNone: a token-bound claim that pins the
// whole primary key and adds a predicate the existing row does not meet (SELECT id
// FROM acc WHERE id = 7 AND balance = 5 FOR UPDATE, row 7 has balance 3 and token 50,
// claimed under 60) stamps no row, so the wrapper calls the absence recorder for a key
// that exists; recorder v3's lookup finds the row under an older token and signals the
// claim conflict: the statement fails with ErrClaimConflict ("a concurrent
// transaction wrote the key … retry") and the transaction is aborted, although no
// other transaction ran — a retry fails the same way forever. Variants: READ
// COMMITTED, LOCK IN SHARE MODE.
func TestClaimWithExtraPredicateOnExistingRowReadsNone(t *testing.T) {
	for _, c := range []struct {
		name, query string
		level       sql.IsolationLevel
	}{
		{"OtherColumn", "SELECT id FROM acc WHERE id = ? AND balance = 5 FOR UPDATE", sql.LevelDefault},
		{"OtherColumnReadCommitted", "SELECT id FROM acc WHERE id = ? AND balance = 5 FOR UPDATE", sql.LevelReadCommitted},
		{"LockInShareMode", "SELECT id FROM acc WHERE id = ? AND balance > 100 LOCK IN SHARE MODE", sql.LevelDefault},
		{"OtherColumnSerializable", "SELECT id FROM acc WHERE id = ? AND balance = 5 FOR UPDATE", sql.LevelSerializable},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, admin, db := absentMy(t)
			testdb.Exec(t, admin, "INSERT INTO acc (id, balance, fence_token) VALUES (7, 3, 50)")
			claimErr, commitErr := fencetest.SnapshotClaim{Level: c.level, Claim: c.query, Args: []any{7}}.Run(t, db)
			if claimErr != nil || commitErr != nil {
				t.Fatalf("%s under 60, row 7 (token 50) not matching the predicate, no concurrent transaction: %v, commit: %v; want no row and a commit", c.query, claimErr, commitErr)
			}
		})
	}
}
