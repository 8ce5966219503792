package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The claim of an absent key over an uncommitted stale INSERT of a key that already
// has a tombstone (red-team rt45b F5; the tombstone guard v10 reads the tombstone FOR
// SHARE, so the recorder waits for the INSERT and its lookup then sees the row) (an old DELETE under 10). The stale INSERT's tombstone probe (INSERT
// … ON CONFLICT DO NOTHING) meets the committed tombstone and takes no lock on it, so the
// recorder's INSERT … ON CONFLICT DO UPDATE does not wait, its lookup cannot see the
// uncommitted row, and the claim under 60 reports the key absent and commits; the stale
// INSERT under 40 then commits too. Before v10, rt44a F1's fix (ErrClaimConflict) covered only a key without a
// tombstone, where the probe's placeholder row is locked.
func TestAbsentClaimOverUncommittedStaleWriteOfTombstonedKeyConflicts(t *testing.T) {
	for _, c := range []struct {
		name, stale string
		iso         sql.IsolationLevel
	}{
		{"Insert/ReadCommitted", "INSERT INTO acc (id, balance) VALUES (7, 1)", sql.LevelReadCommitted},
		{"Insert/RepeatableRead", "INSERT INTO acc (id, balance) VALUES (7, 1)", sql.LevelRepeatableRead},
		{"Rekey/ReadCommitted", "UPDATE acc SET id = 7 WHERE id = 5", sql.LevelReadCommitted},
	} {
		iso := c.iso
		t.Run(c.name, func(t *testing.T) {
			raw, dsn := wholeAcc(t)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			if err := insertAs(db, 10, "INSERT INTO acc (id) VALUES (7)"); err != nil {
				t.Fatal(err)
			}
			if err := insertAs(db, 10, "DELETE FROM acc WHERE id = 7"); err != nil {
				t.Fatal(err)
			}
			stale := fencedsql.WithToken(context.Background(), 40)
			stx, err := db.BeginTx(stale, &sql.TxOptions{Isolation: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer stx.Rollback() //nolint:errcheck
			if _, err := stx.ExecContext(stale, c.stale); err != nil {
				t.Fatal(err)
			}
			ctx := fencedsql.WithToken(context.Background(), 60)
			type res struct{ claimErr, commitErr error }
			done := make(chan res, 1)
			go func() {
				var r res
				tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
				if err != nil {
					done <- res{claimErr: err}
					return
				}
				defer tx.Rollback() //nolint:errcheck
				var id int64
				r.claimErr = tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7).Scan(&id)
				r.commitErr = tx.Commit()
				done <- r
			}()
			var r res
			select {
			case r = <-done:
			case <-time.After(3 * time.Second):
				// The claim waits for the stale transaction (as rt44a F1's fix does for a
				// key without a tombstone): let it commit, then read the claim's outcome.
			}
			staleCommit := stx.Commit()
			if r == (res{}) {
				r = <-done
			}
			var tok int64
			qerr := raw.QueryRow("SELECT fence_token FROM acc WHERE id = 7").Scan(&tok)
			if errors.Is(r.claimErr, sql.ErrNoRows) && r.commitErr == nil && staleCommit == nil && qerr == nil && tok < 60 {
				t.Fatalf("claim of key 7 under 60 over an uncommitted %q under 40 (key tombstoned under 10): claim reported absent and committed, then the stale write committed: row 7 stands under token %d; want the claim refused (ErrClaimConflict) or the stale commit refused", c.stale, tok)
			}
		})
	}
}
