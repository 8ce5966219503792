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
			raw := guardedAccounts(t)
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

// TestReplaceNullTokenRecordsTombstone: from a plain connection, a REPLACE that writes NULL in
// the NOT NULL token column (which has a DEFAULT) over a row written under token 20.
// The BEFORE triggers fencedsql_tombrep_/tombmov_ compare o.fence_token > NEW.fence_token
// with NEW.fence_token NULL, so they record nothing; SQLite's REPLACE resolution then
// turns the NULL into the column's default (0), deletes the row of token 20 (no delete
// trigger) and writes the stale row; the AFTER checks see token 0 and no tombstone.
// The newer row is overwritten with token 0, no error.
// Right: refuse as TestReplaceFromPlainConnection's spellings are (treat a NULL NEW
// token as the lowest, e.g. o.fence_token > coalesce(NEW.fence_token, <default or
// -infinity>), or record the displaced row whenever one exists), nothing changed.
func TestReplaceNullTokenRecordsTombstone(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		"INSERT OR REPLACE INTO accounts (id, balance, fence_token, version) VALUES (1, -1, NULL, 9)",
		"REPLACE INTO accounts (id, balance, fence_token, version) SELECT 1, -1, NULL, 9",
		"UPDATE OR REPLACE accounts SET id = 1, balance = -1, fence_token = NULL, version = version + 1 WHERE id = 3",
	} {
		t.Run(q, func(t *testing.T) {
			raw := guardedAccounts(t)
			_, err := raw.ExecContext(ctx, q)
			var bal, tok int
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			if err == nil || bal == -1 || tok != 20 {
				t.Fatalf("%s over the row of token 20: err = %v, row 1 now balance %d token %d; want the tombstone guard's refusal and the row unchanged", q, err, bal, tok)
			}
		})
	}
}
