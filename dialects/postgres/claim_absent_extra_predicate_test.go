package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestClaimWithExtraPredicateOnExistingRowReadsNone: PostgreSQL's side of red-team
// rt46b F4: a claim pinning the whole key with an extra predicate the existing row
// (token 50) does not meet, under 60, nothing concurrent, reads no row and commits (it
// failed with the recorder's claim conflict, a retry failing forever).
func TestClaimWithExtraPredicateOnExistingRowReadsNone(t *testing.T) {
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		t.Run(iso.String(), func(t *testing.T) {
			raw, db := absentAcc(t)
			if _, err := raw.Exec("INSERT INTO acc (id, balance, fence_token) VALUES (7, 3, 50)"); err != nil {
				t.Fatal(err)
			}
			ctx := fencedsql.WithToken(context.Background(), 60)
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			var id int64
			claimErr := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 AND balance = 5 FOR UPDATE", 7).Scan(&id)
			if !errors.Is(claimErr, sql.ErrNoRows) {
				t.Fatalf("claim of existing row 7 (token 50) with a predicate it does not meet, under 60: %v, want sql.ErrNoRows", claimErr)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
		})
	}
}
