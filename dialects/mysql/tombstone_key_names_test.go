package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneKeyColumnNamedLikeTombstoneColumn: the tombstone table holds the key's
// columns under their own names beside fence_token and deleted_at; a key column of
// either name, in any case (MariaDB compares column names without case), made
// schema.Check's Fix fail with the raw duplicate-column error 1060 (red-team rt37a
// F3). schema.Check now reports the key as one no tombstone guard can be installed
// for, its Fix (the row guard) runs, and TombstoneFix refuses with
// dialect.ErrTombstoneKeyName.
func TestTombstoneKeyColumnNamedLikeTombstoneColumn(t *testing.T) {
	for _, c := range [][2]string{{"deleted_at", "fence_token"}, {"Fence_Token", "tok"}} {
		t.Run(c[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			raw := testdb.Open(t, "mysql", testdb.MySQL(t), "CREATE TABLE accounts ("+c[0]+" BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "+c[1]+" BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
			spec := schema.GuardSpec{Table: "accounts", TokenColumn: c[1]}
			reps, err := schema.Check(ctx, raw, mysql.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(reps[0].Problems, "\n"), "named like the tombstone table's column") {
				t.Fatalf("key column %s: no problem reported: %q", c[0], reps[0].Problems)
			}
			testdb.Exec(t, raw, reps[0].Fix...)
			if _, err := schema.TombstoneFix(ctx, raw, mysql.Dialect, spec); !errors.Is(err, dialect.ErrTombstoneKeyName) {
				t.Fatalf("TombstoneFix for key column %s: %v", c[0], err)
			}
			if reps, err := schema.Check(ctx, raw, mysql.Dialect, spec); err != nil || reps[0].Tombstoned || !reps[0].Guarded {
				t.Fatalf("schema.Check after the Fix: %+v %v", reps, err)
			}
		})
	}
}
