package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestMySQLClaimOfAbsentKeyLongIntegerLiteral (red-team rt47e F2): MariaDB's side of
// postgres' TestClaimOfAbsentKeyLongIntegerLiteral — a 19-digit integer literal pins
// the key; the claim records it and an older INSERT of the key is fenced.
func TestMySQLClaimOfAbsentKeyLongIntegerLiteral(t *testing.T) {
	_, admin, db := absentMy(t)
	for _, lit := range []string{"1000000000000000000", "1234567890123456789", "9223372036854775807"} {
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
		if err := writeAs(db, 40, "INSERT INTO acc (id) VALUES ("+lit+")"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("INSERT of key %s under 40 after its claim under 60 committed: %v, want ErrFenced (tombstone %d)",
				lit, err, tombToken(t, admin, "acc", "id = "+lit))
		}
	}
}
