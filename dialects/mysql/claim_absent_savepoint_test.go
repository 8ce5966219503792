package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestAbsentClaimAgainAfterSavepoints (a red-team rt48h probe that held): claims of
// absent keys around savepoints — a claim rolled back to its savepoint and made again,
// one in a released savepoint, one after an INSERT of the key rolled back — all stand
// after Commit: an older holder's INSERT of each is ErrFenced.
func TestAbsentClaimAgainAfterSavepoints(t *testing.T) {
	_, _, db := absentMy(t)
	ctx := fencedsql.WithToken(context.Background(), 60)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	mustExec := func(q string, args ...any) {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	claim := func(k int) {
		var id int64
		if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", k).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("claim %d: %v", k, err)
		}
	}
	mustExec("SAVEPOINT s1")
	claim(8)
	mustExec("ROLLBACK TO SAVEPOINT s1")
	claim(8)
	mustExec("SAVEPOINT s2")
	claim(9)
	mustExec("RELEASE SAVEPOINT s2")
	mustExec("SAVEPOINT s3")
	mustExec("INSERT INTO acc (id) VALUES (10)")
	mustExec("ROLLBACK TO SAVEPOINT s3")
	claim(10)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{8, 9, 10} {
		if err := writeAs(db, 40, "INSERT INTO acc (id) VALUES (?)", k); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("stale INSERT of key %d claimed (after savepoints) under 60: %v, want ErrFenced", k, err)
		}
	}
}
