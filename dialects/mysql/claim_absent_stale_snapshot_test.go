package mysql_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimWithExtraPredicateOfKeyDeletedAfterSnapshot (red-team rt47b F3): key 7
// (token 10, balance 0) is deleted under 50 after the claimer's REPEATABLE READ
// transaction took its snapshot; the claimer, under 60, claims it with a predicate
// besides the key (`WHERE id = 7 AND balance > 0 FOR UPDATE`). The claim's locking
// read (a current read) finds the key absent; the wrapper's read of whether the key's
// row exists (keyProbe) was a plain read of the snapshot, which still held the
// deleted row: "present", nothing recorded, and a holder of 55 (above the DELETE's
// tombstone 50) created the key the claimer read as absent under 60. Now the probe is
// a locking read too: the absence is recorded under 60 and the INSERT under 55 is
// fenced. Variants: the snapshot taken by a read of another table, LOCK IN SHARE
// MODE, the claim sent with Exec, SERIALIZABLE, and READ COMMITTED (a fresh read
// view per statement; held before).
func TestClaimWithExtraPredicateOfKeyDeletedAfterSnapshot(t *testing.T) {
	const forUpdate = "SELECT id FROM acc WHERE id = ? AND balance > 0 FOR UPDATE"
	for _, c := range []struct {
		name, snapshot, claim string
		level                 sql.IsolationLevel
		exec                  bool
	}{
		{"ForUpdate", "SELECT COUNT(*) FROM acc", forUpdate, sql.LevelDefault, false},
		{"SnapshotOfOtherTable", "SELECT COUNT(*) FROM pair", forUpdate, sql.LevelDefault, false},
		{"LockInShareMode", "SELECT COUNT(*) FROM acc", "SELECT id FROM acc WHERE id = ? AND balance <> 0 LOCK IN SHARE MODE", sql.LevelDefault, false},
		{"Exec", "SELECT COUNT(*) FROM acc", forUpdate, sql.LevelDefault, true},
		{"Serializable", "SELECT COUNT(*) FROM pair", forUpdate, sql.LevelSerializable, false},
		{"ReadCommitted", "SELECT COUNT(*) FROM acc", forUpdate, sql.LevelReadCommitted, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, admin, db := absentMy(t)
			testdb.Exec(t, admin, "INSERT INTO acc (id, balance, fence_token) VALUES (7, 0, 10)")
			claimErr, commitErr := fencetest.SnapshotClaim{
				Level: c.level, Snapshot: c.snapshot, Claim: c.claim, Args: []any{7}, Exec: c.exec,
				Between: func() error { return writeAs(db, 50, "DELETE FROM acc WHERE id = 7") },
			}.Run(t, db)
			if claimErr != nil || commitErr != nil {
				t.Fatalf("claim: %v, commit: %v", claimErr, commitErr)
			}
			fencetest.RequireClaimedAbsent(t, db, tombToken(t, admin, "acc", "id = ?", 7), "INSERT INTO acc (id) VALUES (7)")
		})
	}
}

// TestClaimWithExtraPredicateOfKeyInsertedAfterSnapshot: the opposite race of red-team
// rt47b F3. Key 7 (balance 0) is created under 40 after the claimer's REPEATABLE READ
// snapshot; the claim under 60 with `AND balance > 0` finds the row (a current read)
// not meeting its predicate. The probe, a plain read of the snapshot, found no row, so
// the wrapper recorded the key's absence and the recorder's lookup took the row
// written under 40 for a write after the claim: ErrClaimConflict for a claim that read
// the key present. The locking probe reads the row: nothing recorded, no conflict.
func TestClaimWithExtraPredicateOfKeyInsertedAfterSnapshot(t *testing.T) {
	_, admin, db := absentMy(t)
	claimErr, commitErr := fencetest.SnapshotClaim{
		Snapshot: "SELECT COUNT(*) FROM acc", Claim: "SELECT id FROM acc WHERE id = ? AND balance > 0 FOR UPDATE", Args: []any{7},
		Between: func() error { return writeAs(db, 40, "INSERT INTO acc (id, balance) VALUES (7, 0)") },
	}.Run(t, db)
	if claimErr != nil || commitErr != nil {
		t.Fatalf("claim of key 7 present (not meeting the predicate) since after the snapshot: %v, commit: %v; want no row and a commit", claimErr, commitErr)
	}
	if got := tombToken(t, admin, "acc", "id = ?", 7); got != 0 {
		t.Errorf("tombstone of present key 7: %d, want none", got)
	}
}

// TestClaimWithExtraPredicateOfCompositeKeyDeletedAfterSnapshot (red-team rt47e F1,
// the same hole as rt47b F3): with a composite key (pair: `Region`, n) given as a
// literal and a placeholder, the key probe reads the key's latest committed row too.
func TestClaimWithExtraPredicateOfCompositeKeyDeletedAfterSnapshot(t *testing.T) {
	_, admin, db := absentMy(t)
	testdb.Exec(t, admin, "INSERT INTO pair (`Region`, n, balance, fence_token) VALUES ('eu', 7, 3, 10)")
	claimErr, commitErr := fencetest.SnapshotClaim{
		Snapshot: "SELECT COUNT(*) FROM pair", Claim: "SELECT n FROM pair WHERE `Region` = 'eu' AND n = ? AND balance = 3 FOR UPDATE", Args: []any{7},
		Between: func() error { return writeAs(db, 20, "DELETE FROM pair WHERE `Region` = 'eu' AND n = 7") },
	}.Run(t, db)
	if claimErr != nil {
		t.Fatalf("claim: %v, want sql.ErrNoRows", claimErr)
	}
	if commitErr != nil {
		t.Logf("commit refused: %v", commitErr)
		return
	}
	if err := writeAs(db, 40, "INSERT INTO pair (`Region`, n, balance) VALUES ('eu', 7, 999)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("INSERT of (eu, 7) under 40 after the claim of its absence under 60 committed: %v, want ErrFenced (tombstone %d)",
			err, tombToken(t, admin, "pair", "`Region` = 'eu' AND n = 7"))
	}
}
