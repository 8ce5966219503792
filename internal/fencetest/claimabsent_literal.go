package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// ClaimAbsentLiteralKeys claims, for each integer literal of lits, the absent key of
// acc(id BIGINT PRIMARY KEY …) written inline (SELECT id FROM acc WHERE id = <lit> FOR
// UPDATE) under token 60, and wants the claim to find no row and commit, and a later
// INSERT of the key under token 40 to fail with ErrFenced (tomb, given the literal,
// reads the key's tombstone token for the message).
func ClaimAbsentLiteralKeys(t *testing.T, db *sql.DB, lits []string, tomb func(lit string) int64) {
	t.Helper()
	for _, lit := range lits {
		ctx := fencedsql.WithToken(context.Background(), 60)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = "+lit+" FOR UPDATE").Scan(&id); !errors.Is(err, sql.ErrNoRows) {
			tx.Rollback() //nolint:errcheck
			t.Fatalf("claim of %s: %v, want sql.ErrNoRows", lit, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("claim of %s: commit: %v", lit, err)
		}
		_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 40), "INSERT INTO acc (id) VALUES ("+lit+")")
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("INSERT of key %s under 40 after its claim under 60 committed: %v, want ErrFenced (tombstone %d)", lit, err, tomb(lit))
		}
	}
}
