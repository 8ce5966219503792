package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestFloorChildOfGuardedTableRefused (red-team rt34b F1, G14): accounts is guarded
// (row guard, tombstones, floor); an inheritance child accounts_child is created
// afterwards. A parent's row triggers do not fire for a child's rows, so before, a
// stale holder (token 8, floor 100) updated the child's row through accounts while
// RaiseTokenFloor reported success. Now RaiseTokenFloor raises accounts' floor and
// fails with a *FloorError (ErrFloorUncovered) naming the child, TokenFloor fails the
// same way, and a fenced pool refuses guarded writes through the parent and through
// the child's name (ErrSchema: the lazy check's door) until the child carries the
// guard's triggers; with schema.Check's side door Fix applied, the raise succeeds and
// the stale write of the child's row is refused with ErrBelowFloor.
func TestFloorChildOfGuardedTableRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 3)`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	apply := func() {
		t.Helper()
		fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	}
	apply()
	testdb.Exec(t, raw, `CREATE TABLE accounts_child () INHERITS (accounts)`, `INSERT INTO accounts_child VALUES (3, 100, 5, 3)`)
	raiseErr := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100)
	var fe *schema.FloorError
	if !errors.Is(raiseErr, schema.ErrFloorUncovered) || !errors.As(raiseErr, &fe) || !fe.Raised || !slices.Contains(fe.Uncovered, "public.accounts_child") {
		t.Fatalf("RaiseTokenFloor(100) with an unguarded inheritance child: %v; want a *FloorError (ErrFloorUncovered, Raised) naming public.accounts_child", raiseErr)
	}
	if f, err := schema.TokenFloor(ctx, raw, postgres.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("TokenFloor with an unguarded child = %d, %v; want ErrFloorUncovered", f, err)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts SET balance = 1 WHERE id = 3"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("stale UPDATE through accounts of the child's row: %v; want ErrSchema (the child is a door the guard leaves unfloored)", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts_child SET balance = 1 WHERE id = 3"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("stale UPDATE naming accounts_child: %v; want ErrSchema", err)
	}
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 3").Scan(&bal, &tok); err != nil || bal != 100 || tok != 5 {
		t.Fatalf("child's row after the refused writes: balance=%d fence_token=%d, %v; want unchanged (100, 5)", bal, tok, err)
	}

	// The fix: the side door's statements put the guard's triggers on the child.
	apply()
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatalf("RaiseTokenFloor(100) with the child guarded: %v", err)
	}
	if f, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || f != 100 {
		t.Fatalf("TokenFloor = %d, %v; want 100", f, err)
	}
	fresh := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 8), "UPDATE accounts SET balance = 1 WHERE id = 3"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("stale UPDATE of the child's row through accounts, child guarded: %v; want ErrBelowFloor", err)
	}
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 100), "UPDATE accounts SET balance = 2 WHERE id = 3"); err != nil {
		t.Fatalf("UPDATE of the child's row under the floor's token: %v", err)
	}
}
