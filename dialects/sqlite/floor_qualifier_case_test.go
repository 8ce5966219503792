package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFloorRegistryQualifierInOtherCase (red-team rt38b F4, over-refusal): a table
// registered as "MAIN.accounts" is main's accounts (SQLite compares schema names
// ignoring ASCII case), whose guard reads main's floor. The floor tools compared the
// registry's qualifier with the catalog's byte for byte, so RaiseTokenFloor failed
// with ErrFloorUncovered naming it and TokenFloor refused to report the floor. They
// now compare schema names as the database does (dialect.SchemaKey): the raise
// returns nil and TokenFloor reports 1000.
func TestFloorRegistryQualifierInOtherCase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	raw.SetMaxOpenConns(1)
	testdb.Exec(t, raw, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)")
	specs := []schema.GuardSpec{{Table: "MAIN.accounts"}}
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, specs...); err != nil {
		t.Fatal(err)
	}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, raw, r.Fix...)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 1000); err != nil {
		t.Fatalf("RaiseTokenFloor(1000) with the table registered as MAIN.accounts (main's accounts, guard reading main's floor): %v; want nil", err)
	}
	if f, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); err != nil || f != 1000 {
		t.Fatalf("TokenFloor = %d, %v; want 1000", f, err)
	}
}
