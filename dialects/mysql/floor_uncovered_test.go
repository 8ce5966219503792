package mysql_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFloorTriggerMissingRefused (red-team rt34b F1, G14): accounts is guarded on
// MariaDB, then its floor trigger fencedsql_floor_accounts (BEFORE INSERT) goes
// missing (dropped, or a guard from before the floor partly re-created).
// GuardInstalledQuery calls that guard not installed, and before, the fenced pool
// fenced the table by the wrapper alone: an INSERT under token 8 with the floor at 10
// was stored while RaiseTokenFloor succeeded through the UPDATE guard and TokenFloor
// reported 10. Now the half guard is a lost guard (ErrSchema from the lazy check,
// nothing stored), and RaiseTokenFloor and TokenFloor fail with ErrFloorUncovered
// naming the table; schema.Check's Fix restores the whole guard, after which the raise
// succeeds and the stale INSERT is refused with ErrBelowFloor.
func TestFloorTriggerMissingRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 10, 5, 1)")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	apply := func() {
		t.Helper()
		fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	}
	apply()
	testdb.Exec(t, raw, "DROP TRIGGER fencedsql_floor_accounts")
	raiseErr := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10)
	var fe *schema.FloorError
	if !errors.Is(raiseErr, schema.ErrFloorUncovered) || !errors.As(raiseErr, &fe) || len(fe.Uncovered) == 0 || !slices.ContainsFunc(fe.Uncovered, func(s string) bool { return s == "accounts" || len(s) > 9 && s[len(s)-9:] == ".accounts" }) {
		t.Fatalf("RaiseTokenFloor(10) with the floor trigger missing: %v; want a *FloorError (ErrFloorUncovered) naming accounts", raiseErr)
	}
	if f, err := schema.TokenFloor(ctx, raw, mysql.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("TokenFloor with the floor trigger missing = %d, %v; want ErrFloorUncovered", f, err)
	}
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 8), "INSERT INTO accounts (id, balance) VALUES (3, 1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("fenced INSERT under token 8 with the floor trigger missing: %v; want ErrSchema (half a guard is a lost guard)", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 3").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows with id 3 after the refused INSERT: %d, %v; want 0", n, err)
	}

	apply()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10); err != nil {
		t.Fatalf("RaiseTokenFloor(10) with the guard whole again: %v", err)
	}
	if f, err := schema.TokenFloor(ctx, raw, mysql.Dialect); err != nil || f != 10 {
		t.Fatalf("TokenFloor = %d, %v; want 10", f, err)
	}
	fresh := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 8), "INSERT INTO accounts (id, balance) VALUES (3, 1)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("fenced INSERT under token 8, floor 10, guard whole: %v; want ErrBelowFloor", err)
	}
}
