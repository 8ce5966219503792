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

// TestFloorRowLost: a floor table that has lost its row refuses every write through
// the guards (not "no floor"), TokenFloor fails with ErrFloorLost, schema.Check names
// the floor, and RaiseTokenFloor writes the row back.
func TestFloorRowLost(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor")
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("UPDATE with the floor row lost: %v, want ErrBelowFloor", err)
	}
	if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, fence_token, version) VALUES (9, 70, 1)"); err == nil {
		t.Fatal("plain INSERT with the floor row lost accepted")
	}
	if _, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); !errors.Is(err, schema.ErrFloorLost) {
		t.Fatalf("TokenFloor: %v, want ErrFloorLost", err)
	}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil || reps[0].OK() || !strings.Contains(strings.Join(reps[0].Problems, ";"), "fencedsql_floor") {
		t.Fatalf("schema.Check: %+v %v; want the lost floor row reported", reps, err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 60); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE after the row came back: %v", err)
	}
}
