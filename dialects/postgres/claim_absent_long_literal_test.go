package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestClaimOfAbsentKeyLongIntegerLiteral (red-team rt47e F2): a claim of an absent
// bigint key written as an integer literal of 19 digits (snowflake-style ids) pinned
// nothing — it claimed nothing and an older INSERT of the key landed. Every literal
// that fits 64 bits pins the key now; the claim records it and the older INSERT is
// fenced. A literal beyond the column's range matches no row and records nothing
// (no such key can be inserted).
func TestClaimOfAbsentKeyLongIntegerLiteral(t *testing.T) {
	raw, db := absentAcc(t)
	fencetest.ClaimAbsentLiteralKeys(t, db, []string{"1000000000000000000", "1234567890123456789", "9223372036854775807"},
		func(lit string) int64 { return tombOf(t, raw, "acc", "id = "+lit) })
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = 9223372036854775808 FOR UPDATE").Scan(&id); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("claim beyond bigint: %v, want sql.ErrNoRows", err)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("claim beyond bigint: commit: %v", err)
	}
}
