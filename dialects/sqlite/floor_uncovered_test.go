package sqlite_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestFloorRaiseNamesRegisteredTableWithoutGuard (red-team rt34b F1, G14): the floor
// is enforced only by the guards' triggers. accounts carries the guard; ledger is
// registered but fenced by the wrapper alone (a supported configuration), so a stale
// holder's token below the floor still writes it. RaiseTokenFloor must not report the
// floor in force: it raises accounts' floor and fails with a *FloorError
// (ErrFloorUncovered, Raised) naming ledger, and TokenFloor fails the same way (what a
// health check comparing the floor with the lock service reads). Once ledger's guard is
// installed (schema.Check's Fix), the raise succeeds and the stale write is refused
// with ErrBelowFloor.
func TestFloorRaiseNamesRegisteredTableWithoutGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	file, raw := regressionGuardedFile(t, ctx) // accounts: guard and floor installed
	for _, q := range []string{
		"CREATE TABLE ledger (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO ledger VALUES (1, 10, 5, 1)",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}, schema.GuardSpec{Table: "ledger"}); err != nil {
		t.Fatal(err)
	}
	raiseErr := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 100)
	var fe *schema.FloorError
	if !errors.Is(raiseErr, schema.ErrFloorUncovered) || !errors.As(raiseErr, &fe) || !fe.Raised || !slices.Contains(fe.Uncovered, "ledger") {
		t.Fatalf("RaiseTokenFloor(100) with ledger registered but unguarded: %v; want a *FloorError (ErrFloorUncovered, Raised) naming ledger", raiseErr)
	}
	var floor int64
	if err := raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor").Scan(&floor); err != nil || floor != 100 {
		t.Fatalf("the guards' floor after the raise: %d, %v; want 100 (raised where the guards judge)", floor, err)
	}
	if f, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("TokenFloor with ledger unguarded = %d, %v; want ErrFloorUncovered", f, err)
	}
	if _, err := schema.TokenFloors(ctx, raw, sqlite.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("TokenFloors with ledger unguarded: %v; want ErrFloorUncovered", err)
	}
	// MaxToken still counts the floor (it needs the floor whatever the coverage).
	if m, err := schema.MaxToken(ctx, raw, sqlite.Dialect); err != nil || m < 99 {
		t.Fatalf("MaxToken = %d, %v; want at least the floor − 1 (99)", m, err)
	}

	// The fix: install ledger's guard; the raise is then complete.
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "ledger"})
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 100); err != nil {
		t.Fatalf("RaiseTokenFloor(100) with every registered table guarded: %v", err)
	}
	if f, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); err != nil || f != 100 {
		t.Fatalf("TokenFloor = %d, %v; want 100", f, err)
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&moderncsqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE ledger SET amount = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("stale UPDATE of ledger under token 8, floor 100: %v; want ErrBelowFloor", err)
	}
	var amount, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT amount, fence_token FROM ledger WHERE id = 1").Scan(&amount, &tok); err != nil || amount != 10 || tok != 5 {
		t.Fatalf("ledger row after the refused write: amount=%d fence_token=%d, %v; want unchanged (10, 5)", amount, tok, err)
	}
}

// TestFloorTriggerMissingRefused (red-team rt34b F1, the SQLite form of the MariaDB
// test): accounts' guard loses its floor trigger fencedsql_floor_accounts (BEFORE
// INSERT). Half a guard is a lost guard: the fenced pool refuses the table's guarded
// writes (ErrSchema) instead of fencing it by the wrapper alone, whose INSERT under a
// token below the floor was stored, and RaiseTokenFloor names the table
// (ErrFloorUncovered).
func TestFloorTriggerMissingRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	file, raw := regressionGuardedFile(t, ctx)
	if _, err := raw.ExecContext(ctx, "DROP TRIGGER fencedsql_floor_accounts"); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 10); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("RaiseTokenFloor(10) with the floor trigger missing: %v; want ErrFloorUncovered", err)
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&moderncsqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 8), "INSERT INTO accounts (id, balance) VALUES (3, 1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("fenced INSERT under token 8 with the floor trigger missing: %v; want ErrSchema", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 3").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows with id 3 after the refused INSERT: %d, %v; want 0", n, err)
	}
}
