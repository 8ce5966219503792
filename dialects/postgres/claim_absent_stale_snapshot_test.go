package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/jackc/pgx/v5/pgconn"
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
			ctx := fencedsql.WithToken(context.Background(), 60)
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: c.level})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pair").Scan(&n); err != nil { // the snapshot
				t.Fatal(err)
			}
			if err := insertAs(db, 50, "DELETE FROM acc WHERE id = 7"); err != nil {
				t.Fatal(err)
			}
			const claim = "SELECT id FROM acc WHERE id = $1 AND balance > 0 FOR UPDATE"
			var claimErr error
			if c.exec {
				_, claimErr = tx.ExecContext(ctx, claim, 7)
			} else {
				var id int64
				if claimErr = tx.QueryRowContext(ctx, claim, 7).Scan(&id); errors.Is(claimErr, sql.ErrNoRows) {
					claimErr = nil
				}
			}
			if claimErr == nil {
				claimErr = tx.Commit()
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
			if got := tombOf(t, raw, "acc", "id = $1", 7); got != 60 {
				t.Errorf("tombstone of 7 after the claim under 60: %d, want 60", got)
			}
			if err := insertAs(db, 55, "INSERT INTO acc (id) VALUES (7)"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("INSERT under 55 of key 7 claimed absent under 60 (committed): %v, want ErrFenced", err)
			}
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
	ctx := fencedsql.WithToken(context.Background(), 60)
	done := make(chan error, 1)
	go func() {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			done <- err
			return
		}
		defer tx.Rollback() //nolint:errcheck
		var id int64
		done <- tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 AND balance = 5 FOR UPDATE NOWAIT", 7).Scan(&id)
	}()
	select {
	case err := <-done:
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55P03" {
			t.Fatalf("NOWAIT claim with an extra predicate of a row another transaction locks: %v, want 55P03", err)
		}
	case <-time.After(5 * time.Second):
		otx.Rollback() //nolint:errcheck
		<-done
		t.Fatal("the probe of a FOR UPDATE NOWAIT claim blocked behind another transaction's lock of the key's row")
	}
}
