package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFloorRaiseNamesRegisteredTableOfAttachedDatabase (red-team rt37c F3, the SQLite
// form): main's registry lists accounts and aux.accounts, a table of an ATTACHed
// database whose guard's triggers read aux's floor table. RaiseTokenFloor raises
// main's floor only (attached databases are not listed: ATTACH is per connection), and
// counted aux.accounts as covered because its guard is installed. It now raises main's
// floor and fails with a *FloorError (ErrFloorUncovered, Raised) naming aux.accounts,
// TokenFloor fails the same way, and aux's floor is left as it was; a stale write to
// aux.accounts is what the error warns of.
func TestFloorRaiseNamesRegisteredTableOfAttachedDatabase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(dir, "m.db")))
	raw.SetMaxOpenConns(1) // ATTACH is per connection
	const accounts = " (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"
	testdb.Exec(t, raw, "ATTACH DATABASE '"+filepath.ToSlash(filepath.Join(dir, "aux.db"))+"' AS aux",
		"CREATE TABLE accounts"+accounts, "CREATE TABLE aux.accounts"+accounts)
	specs := []schema.GuardSpec{{Table: "accounts"}, {Table: "aux.accounts"}}
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
	testdb.Exec(t, raw, "INSERT INTO aux.accounts (id, balance, fence_token, version) VALUES (1, 0, 100, 1)")

	err = schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 1000)
	var fe *schema.FloorError
	if !errors.Is(err, schema.ErrFloorUncovered) || !errors.As(err, &fe) || !fe.Raised || !slices.Equal(fe.Uncovered, []string{"aux.accounts"}) {
		t.Fatalf("RaiseTokenFloor(1000) with aux.accounts registered in main: %v; want a *FloorError (ErrFloorUncovered, Raised) naming aux.accounts", err)
	}
	var mainFloor, auxFloor int64
	if err := raw.QueryRowContext(ctx, "SELECT (SELECT floor FROM main.fencedsql_floor), (SELECT floor FROM aux.fencedsql_floor)").Scan(&mainFloor, &auxFloor); err != nil || mainFloor != 1000 || auxFloor != 0 {
		t.Fatalf("floors after the raise: main %d, aux %d, %v; want 1000 and 0", mainFloor, auxFloor, err)
	}
	if f, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("TokenFloor with aux.accounts registered = %d, %v; want ErrFloorUncovered", f, err)
	}
	// What the error reports: aux's guard reads aux's floor, which was not raised.
	if _, err := raw.ExecContext(ctx, "UPDATE aux.accounts SET balance = 1, fence_token = 500, version = version + 1 WHERE id = 1"); err != nil {
		t.Fatalf("write to aux.accounts under 500 (aux's floor 0): %v", err)
	}
}
