package sqlite_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestReplaceNullTokenRefused: SQLite's OR REPLACE resolves a NOT NULL violation by
// writing the column's default: an UPDATE OR REPLACE (or INSERT OR REPLACE) from a plain
// connection that sets the token or the version to NULL would store 0 and lower the
// row's token. The guard refuses a NULL fencing column itself, with the NOT NULL
// constraint's message (so the wrapper's own fenced case still reads as ErrFenced).
func TestReplaceNullTokenRefused(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		"UPDATE OR REPLACE accounts SET fence_token = NULL, balance = -1, version = version + 1 WHERE id = 1",
		"UPDATE OR REPLACE accounts SET version = NULL, balance = -1 WHERE id = 1",
		"INSERT OR REPLACE INTO accounts (id, balance, fence_token, version) VALUES (7, -1, NULL, 1)",
	} {
		t.Run(q, func(t *testing.T) {
			raw := rt20gGuarded(t)
			_, err := raw.ExecContext(ctx, q)
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE balance = -1 OR fence_token = 0").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if err == nil || n != 0 {
				t.Fatalf("%s: err = %v, %d rows written with the default in place of NULL", q, err, n)
			}
		})
	}
	// The wrapper's fenced case is still ErrFenced (the guard's refusal reads as the
	// NOT NULL constraint's).
	file, _ := ownTriggerDB(t)
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale fenced UPDATE: %v, want ErrFenced", err)
	}
}
