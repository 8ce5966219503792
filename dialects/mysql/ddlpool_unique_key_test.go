package mysql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// On MariaDB/MySQL a unique key added through a fenced_allow=ddl pool leaves the
// tombstone guard whole, so the pool sends it (unlike SQLite's, whose REPLACE triggers
// compare the unique indexes of the install: red-team rt53d F1, refused there). A
// REPLACE deletes the rows it collides with on any unique key as rows, firing the
// tombstone's DELETE trigger, and INSERT … ON DUPLICATE KEY UPDATE updates the row it
// meets under the row guard. After each spelling of a new unique key: the newest
// holder's REPLACE on a plain connection displaces row 2 through it and key 2's
// tombstone holds the newest token, a stale re-insert of key 2 through the pool is
// ErrFenced, and a stale upsert meeting row 3 on the new key is ErrFenced.
func TestDDLPoolUniqueKeyKeepsTombstones(t *testing.T) {
	for _, c := range []struct{ name, ddl string }{
		{"create_unique_index", "CREATE UNIQUE INDEX u ON ledger (balance)"},
		{"add_unique_key", "ALTER TABLE ledger ADD UNIQUE KEY u (balance)"},
		{"add_constraint_unique", "ALTER TABLE ledger ADD CONSTRAINT u UNIQUE (balance)"},
		{"long_unique_hash", "ALTER TABLE ledger ADD COLUMN note_key BLOB AS (CONCAT('k', balance)) PERSISTENT, ADD UNIQUE (note_key)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := guardedLedger(t, "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO ledger (id, balance, fence_token, version) VALUES (1, 100, 50, 1), (2, 200, 50, 1), (3, 300, 50, 1)")
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger&fenced_allow=ddl")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), "UPDATE ledger SET version = version + 1 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, c.ddl); err != nil {
				t.Fatalf("%s through the ddl pool: %v; want it sent (the guard does not depend on unique keys)", c.ddl, err)
			}
			if _, err := admin.ExecContext(ctx, "REPLACE INTO ledger (id, balance, fence_token, version) VALUES (9, 200, 60, 1)"); err != nil {
				t.Fatalf("plain REPLACE by the newest holder: %v", err)
			}
			var tomb int64
			if err := admin.QueryRow("SELECT fence_token FROM fencedsql_tomb_ledger WHERE id = 2").Scan(&tomb); err != nil || tomb < 60 {
				t.Errorf("key 2 displaced through the new unique key: tombstone %d, %v; want one at >= 60", tomb, err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO ledger (id, balance) VALUES (2, 7)"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale re-insert of key 2 through the pool: %v; want ErrFenced", err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO ledger (id, balance) VALUES (8, 300) ON DUPLICATE KEY UPDATE version = version + 5"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale upsert meeting row 3 on the new key: %v; want ErrFenced", err)
			}
			var n int
			if err := admin.QueryRow("SELECT count(*) FROM ledger WHERE id IN (2, 8) OR version > 3").Scan(&n); err != nil || n != 0 {
				t.Errorf("rows written by the stale holder: %d, %v", n, err)
			}
		})
	}
}
