package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A fenced_allow=ddl pool refuses CREATE UNIQUE INDEX on a guarded table, whatever
// WithDDL allows (red-team rt53d F1): the tombstone guard's REPLACE triggers compare
// the unique indexes of the install, so a REPLACE colliding on a new one (on a
// column, an expression, partial) deleted a row of another key without its
// tombstone, and a stale holder re-inserted the key through the same pool. The
// refusal is ErrUnsupported and names the way out (a plain connection, then
// fencedsql-schema -apply). Ordinary index DDL passes: CREATE INDEX, REINDEX, and DROP
// INDEX, a unique one included (its triggers then over-record: fail closed), and
// afterwards the newest holder's REPLACE and a stale re-insert leave every key at
// its token or tombstoned at it.
func TestDDLPoolUniqueIndexRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn,
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT UNIQUE, slug TEXT)",
		"CREATE UNIQUE INDEX accounts_slug ON accounts (slug)")
	raw.SetMaxOpenConns(1)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version, email, slug) VALUES (1, 100, 50, 3, 'a@x', 'a'), (2, 200, 50, 3, 'b@x', 'b'), (3, 300, 50, 3, 'c@x', 'c')")
	db := testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), "UPDATE accounts SET balance = 101 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, ddl := range []string{
		"CREATE UNIQUE INDEX rt_u ON accounts (balance)",
		`CREATE UNIQUE INDEX IF NOT EXISTS main.rt_e ON "Accounts" (lower(email))`,
		"create unique index rt_p on [accounts] (balance) where balance > 0",
	} {
		_, err := db.ExecContext(ctx, ddl)
		if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "fencedsql-schema -apply") {
			t.Errorf("%s through the ddl pool: %v; want ErrUnsupported naming the Fix", ddl, err)
		}
	}
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM pragma_index_list('accounts') WHERE name LIKE 'rt_%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused unique indexes created: %d, %v", n, err)
	}
	for _, ddl := range []string{"CREATE INDEX rt_i ON accounts (balance)", "REINDEX accounts", "DROP INDEX rt_i", "DROP INDEX accounts_slug"} {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			t.Errorf("%s through the ddl pool: %v; want it sent", ddl, err)
		}
	}
	// The newest holder (60) on a plain connection collides with row 2 on the columns
	// of the former indexes; a stale holder (10) then inserts key 2 through the pool.
	if _, err := raw.ExecContext(ctx, "INSERT OR REPLACE INTO accounts (id, balance, fence_token, version, email, slug) VALUES (9, 200, 60, 1, 'z@x', 'b')"); err != nil {
		t.Fatalf("plain REPLACE: %v", err)
	}
	_, stale := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, balance, email) VALUES (2, 7, 'q@x')")
	var tok int64
	if err := raw.QueryRow("SELECT fence_token FROM accounts WHERE id = 2").Scan(&tok); err != nil || tok != 50 {
		t.Errorf("key 2 after the REPLACE and the stale re-insert (err %v): token %d, %v; want row 2 still at 50", stale, tok, err)
	}
	if stale == nil {
		t.Errorf("stale INSERT of a live key accepted")
	}
}
