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

// Red-team rt25a: G14 — the floor's installation after the floor table lost its row.

// TestGuardInstallLeavesLostFloorRowMissing (fail-open). With the floor
// table's row lost the guards refuse every write (rt24c F1/F5), and schema.Check says
// to write the row back with RaiseTokenFloor at the lock service's LastToken + 1. But
// guarding one more table (schema.Check's Fix for it: GuardDDL → FloorDDL's
// `INSERT OR IGNORE … (1, 0)`) writes the row back at 0: every stale token is accepted
// again, silently (TokenFloor 0, no error), on every guarded table of the database.
//
// Right behaviour: an installation writes the floor row only when it creates the floor
// table; it leaves a lost row missing (writes refused, ErrFloorLost reported) for
// RaiseTokenFloor to write back.
func TestGuardInstallLeavesLostFloorRowMissing(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the install: %v, want ErrBelowFloor", err)
	}
	testdb.Exec(t, raw, "CREATE TABLE ledger (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	ownExec(t, raw, reps[0].Fix...)
	fl, flErr := schema.TokenFloor(ctx, raw, sqlite.Dialect)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (7, 2)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after guarding another table, token 20 (floor was 50, row lost): %v; TokenFloor %d (%v); want ErrBelowFloor: the installation wrote the floor row back at 0", err, fl, flErr)
	}
}
