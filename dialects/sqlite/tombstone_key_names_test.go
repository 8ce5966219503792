package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneKeyColumnNamedLikeTombstoneColumn: the tombstone table holds the key's
// columns under their own names beside fence_token and deleted_at; a key column of
// either name, in any ASCII case (SQLite compares column names so), made
// schema.Check's Fix fail with the raw "duplicate column name" (red-team rt37a F3).
// schema.Check now reports the key as one no tombstone guard can be installed for,
// its Fix (the row guard) runs, and TombstoneFix refuses with
// dialect.ErrTombstoneKeyName.
func TestTombstoneKeyColumnNamedLikeTombstoneColumn(t *testing.T) {
	for _, c := range [][2]string{{"deleted_at", "fence_token"}, {"FENCE_token", "tok"}} {
		t.Run(c[0], func(t *testing.T) {
			ctx := context.Background()
			raw := testdb.Open(t, "sqlite", testdb.SQLite(t), "CREATE TABLE accounts ("+c[0]+" INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "+c[1]+" BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			raw.SetMaxOpenConns(1)
			spec := schema.GuardSpec{Table: "accounts", TokenColumn: c[1]}
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(reps[0].Problems, "\n"), "named like the tombstone table's column") {
				t.Fatalf("key column %s: no problem reported: %q", c[0], reps[0].Problems)
			}
			testdb.Exec(t, raw, reps[0].Fix...)
			if _, err := schema.TombstoneFix(ctx, raw, sqlite.Dialect, spec); !errors.Is(err, dialect.ErrTombstoneKeyName) {
				t.Fatalf("TombstoneFix for key column %s: %v", c[0], err)
			}
			if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || reps[0].Tombstoned || !reps[0].Guarded {
				t.Fatalf("schema.Check after the Fix: %+v %v", reps, err)
			}
		})
	}
}
