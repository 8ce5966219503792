package postgres_test

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestClaimWithExtraPredicateOfKeyDeletedAfterSnapshot: PostgreSQL's side of red-team
// rt47b F3. Key 7 (token 10) is deleted under 50 after the claimer's transaction took
// its snapshot; the claimer, under 60, then claims `WHERE id = 7 AND balance > 0`.
// The wrapper's read of whether the key's row exists (keyProbe) must not take the
// snapshot's deleted row for a present key and record nothing: a holder of 55 (between
// the DELETE's tombstone and the claimer) would then create the key the claimer read
// as absent. Wanted: the claim records the absence under 60 (INSERT under 55 fenced),
// or fails with a serialization failure or ErrClaimConflict (the retry records).
// Under REPEATABLE READ and SERIALIZABLE, a snapshot row meeting the predicate
// (balance 5) fails the claim's own UPDATE; one not meeting it (balance 0) is what the
// plain probe took for present. READ COMMITTED (a fresh snapshot per statement) is the
// control; Exec runs the claim through execClaim.
func TestClaimWithExtraPredicateOfKeyDeletedAfterSnapshot(t *testing.T) {
	type claimCase struct {
		name    string
		level   sql.IsolationLevel
		balance int
		exec    bool
	}
	var cases []claimCase
	for _, level := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		for _, balance := range []int{0, 5} {
			cases = append(cases, claimCase{level.String(), level, balance, false})
		}
	}
	cases = append(cases, claimCase{"ExecRepeatableRead", sql.LevelRepeatableRead, 0, true})
	for _, c := range cases {
		name := c.name
		if c.balance != 0 {
			name += "/SnapshotRowMatches"
		}
		t.Run(name, func(t *testing.T) {
			raw, db := absentAcc(t)
			if _, err := raw.Exec("INSERT INTO acc (id, balance, fence_token) VALUES (7, $1, 10)", c.balance); err != nil {
				t.Fatal(err)
			}
			claimErr, commitErr := fencetest.SnapshotClaim{
				Level: c.level, Snapshot: "SELECT count(*) FROM pair", Exec: c.exec,
				Claim: "SELECT id FROM acc WHERE id = $1 AND balance > 0 FOR UPDATE", Args: []any{7},
				Between: func() error { return insertAs(db, 50, "DELETE FROM acc WHERE id = 7") },
			}.Run(t, db)
			if claimErr == nil {
				claimErr = commitErr
			}
			switch {
			case isSerialization(claimErr) || errors.Is(claimErr, fencedsql.ErrClaimConflict):
				if c.level == sql.LevelReadCommitted {
					t.Fatalf("claim under READ COMMITTED: %v, want no error (the key is absent in the statement's snapshot)", claimErr)
				}
				t.Logf("refused: %v", claimErr)
				return // the caller retries, and the retry records
			case claimErr != nil:
				t.Fatalf("claim of key 7 deleted after the snapshot: %v", claimErr)
			}
			fencetest.RequireClaimedAbsent(t, db, tombOf(t, raw, "acc", "id = $1", 7), "INSERT INTO acc (id) VALUES (7)")
		})
	}
}

// TestNowaitClaimWithExtraPredicateProbeDoesNotWait: the probe of a NOWAIT claim
// (red-team rt47b F3 made it a locking read) does not wait either. Row 7 (balance 3)
// is locked FOR UPDATE by another transaction; the claim `WHERE id = 7 AND balance =
// 5 FOR UPDATE NOWAIT` under 60 stamps nothing, and its probe (FOR KEY SHARE NOWAIT)
// fails with lock_not_available at once instead of blocking until the other ends.
func TestNowaitClaimWithExtraPredicateProbeDoesNotWait(t *testing.T) {
	raw, db := absentAcc(t)
	if _, err := raw.Exec("INSERT INTO acc (id, balance, fence_token) VALUES (7, 3, 50)"); err != nil {
		t.Fatal(err)
	}
	otx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer otx.Rollback() //nolint:errcheck
	var id int64
	if err := otx.QueryRow("SELECT id FROM acc WHERE id = 7 FOR UPDATE").Scan(&id); err != nil {
		t.Fatal(err)
	}
	requireNowaitRefused(t, db, "SELECT id FROM acc WHERE id = $1 AND balance = 5 FOR UPDATE NOWAIT", 7, otx.Rollback)
}
