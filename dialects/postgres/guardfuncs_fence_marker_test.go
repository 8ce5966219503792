package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The fast fence fencedsql_fence_<table> is judged whatever its marker (red-team rt46a
// F3, guardFunctions): skipped when it did not carry this version's, it let the guard
// function alone be re-created (its marker kept) to read a shadow floor, with no fence
// left to compare its floor with; a write below the raised floor landed with every
// check passing.

// shadowFloorAcc is wholeAcc with the floor raised to 100, a shadow floor (0) in
// schema shadow_floor, the guard function re-created to read it, and the fast fence
// re-created with its marker spelled marker (its logic unchanged).
func shadowFloorAcc(t *testing.T, marker string) (problems []string, fix []string, insertErr error, rows int) {
	t.Helper()
	raw, dsn := wholeAcc(t)
	if err := schema.RaiseTokenFloor(context.Background(), raw, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	rawWith(t, dsn,
		"CREATE SCHEMA shadow_floor",
		"CREATE TABLE shadow_floor.fencedsql_floor (id int PRIMARY KEY, floor bigint NOT NULL)",
		"INSERT INTO shadow_floor.fencedsql_floor VALUES (1, 0)",
		"CREATE SEQUENCE shadow_floor.fencedsql_floor_seq MINVALUE 0 START 0",
		`DO $$DECLARE f oid; BEGIN
  SELECT p.oid INTO f FROM pg_proc p WHERE p.proname = 'fencedsql_guard_acc';
  EXECUTE replace(pg_get_functiondef(f), 'public.fencedsql_floor', 'shadow_floor.fencedsql_floor');
  SELECT p.oid INTO f FROM pg_proc p WHERE p.proname = 'fencedsql_fence_acc';
  EXECUTE replace(pg_get_functiondef(f), 'fencedsql one-statement delete v4', '`+marker+`');
  END$$`)
	var src string
	if err := raw.QueryRow("SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_guard_acc'").Scan(&src); err != nil || !strings.Contains(src, "shadow_floor.fencedsql_floor") {
		t.Fatalf("set-up: the guard function was not redirected (%v):\n%s", err, src)
	}
	problems, fix = wholeReport(t, raw)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	insertErr = insertAs(db, 50, "INSERT INTO acc (id, balance) VALUES (99, 666)")
	if err := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 99").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		rawWith(t, dsn, fix...)
		if after, _ := wholeReport(t, raw); len(after) != 0 {
			t.Errorf("after the Fix: %q", after)
		}
	}
	return problems, fix, insertErr, rows
}

// TestGuardRedirectedToShadowFloorBehindUnmarkedFence: the fence's marker changed
// (another spelling, another version's, none) does not take it out of the comparison:
// the fence is reported as a changed guard function with the guard's DDL as Fix, the
// pool refuses the write under token 50 (< floor 100), and the Fix restores the guard.
func TestGuardRedirectedToShadowFloorBehindUnmarkedFence(t *testing.T) {
	for name, marker := range map[string]string{
		"Spelling": "fencedsql one-statement delete V4",
		"Older":    "fencedsql one-statement delete v3",
		"None":     "no marker",
	} {
		t.Run(name, func(t *testing.T) {
			probs, fix, err, n := shadowFloorAcc(t, marker)
			if !strings.Contains(strings.Join(probs, "\n"), "fencedsql_fence_acc") || !strings.Contains(strings.Join(fix, "\n"), "fencedsql_fence_acc") {
				t.Errorf("schema.Check problems %q: want the fence reported, with the guard's DDL as Fix", probs)
			}
			if err == nil || n != 0 {
				t.Fatalf("an INSERT under token 50, below the floor 100: %v, rows %d; want refused", err, n)
			}
		})
	}
}
