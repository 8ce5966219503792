package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestGuardTableGeneratedOrMissingColumnReported (red-team rt47g F1): a tombstone
// table or floor created by hand before schema.Check with a generated column (which
// pragma_table_info leaves out) or without a column the guards write was reported OK,
// and every DELETE of the guarded table then failed with SQLite's own "cannot INSERT
// into generated column". Now it is a guard-table door naming the column (the lazy
// check refuses the table); for a generated column of the tombstone table its Fix
// rebuilds the table as the guards create it.
func TestGuardTableGeneratedOrMissingColumnReported(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, table, want string
		fixed             bool // the door's Fix rebuilds the table (else: the door is reported, the pool refuses)
	}{
		{"generated deleted_at", "CREATE TABLE fencedsql_tomb_accounts (id INTEGER NOT NULL, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL GENERATED ALWAYS AS (0) STORED, PRIMARY KEY (id)) WITHOUT ROWID",
			"generated column deleted_at", true},
		{"generated fence_token", "CREATE TABLE fencedsql_tomb_accounts (id INTEGER NOT NULL, x INTEGER, fence_token INTEGER NOT NULL GENERATED ALWAYS AS (x) VIRTUAL, deleted_at REAL NOT NULL, PRIMARY KEY (id)) WITHOUT ROWID",
			"generated column fence_token", true},
		{"no deleted_at", "CREATE TABLE fencedsql_tomb_accounts (id INTEGER NOT NULL, fence_token INTEGER NOT NULL, PRIMARY KEY (id)) WITHOUT ROWID",
			"no column deleted_at", false},
		{"generated floor", "CREATE TABLE fencedsql_floor (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), x INTEGER, floor INTEGER NOT NULL GENERATED ALWAYS AS (0) VIRTUAL)",
			"generated column floor", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := testdb.Open(t, "sqlite", testdb.SQLite(t), "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", c.table)
			raw.SetMaxOpenConns(1)
			spec := schema.GuardSpec{Table: "accounts"}
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, sd := range reps[0].SideDoors {
				found = found || sd.Kind == dialect.SideDoorGuardTable && strings.Contains(sd.Problem, c.want)
			}
			if reps[0].OK() || !found {
				t.Fatalf("over the hand-made guard table: OK=%v, want a guard-table door naming %q (problems %q)", reps[0].OK(), c.want, reps[0].Problems)
			}
			if !c.fixed {
				return
			}
			testdb.Exec(t, raw, reps[0].Fix...)
			reps, err = schema.Check(ctx, raw, sqlite.Dialect, spec)
			if err != nil || !reps[0].OK() {
				t.Fatalf("after the Fix: %v, problems %q", err, reps[0].Problems)
			}
			testdb.Exec(t, raw, "INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)", "DELETE FROM accounts WHERE id = 1")
		})
	}
}
