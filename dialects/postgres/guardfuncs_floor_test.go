package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt32a's attacks on guardFunctions: the guard's functions re-created by their
// owner with the text the guard installs, for another schema's floor (one the owner
// controls, at 0), one function at a time, or a fast fence calling another schema's
// slow fence. Every function of one installation names the same floor, and the fast
// fence calls the slow fence of its own schema, which is judged whatever its marker:
// each is a changed guard now. Left open (docs/design.md): all of them re-created
// consistently for another floor.

// evilFloor creates a schema rt32a_evil holding a floor table (floor 0) and a
// floor sequence never advanced: a floor the functions' owner controls.
var evilFloor = []string{
	"CREATE SCHEMA rt32a_evil",
	"CREATE TABLE rt32a_evil.fencedsql_floor (id integer PRIMARY KEY, floor bigint NOT NULL)",
	"INSERT INTO rt32a_evil.fencedsql_floor VALUES (1, 0)",
	"CREATE SEQUENCE rt32a_evil.fencedsql_floor_seq MINVALUE 0 START 0",
}

// retargetFloor returns src with every name of the public floor replaced by the
// rt32a_evil one: the very text the guard installs, for another floor's schema.
func retargetFloor(src string) string {
	src = strings.ReplaceAll(src, "public.fencedsql_floor", "rt32a_evil.fencedsql_floor")
	return strings.ReplaceAll(src, "'public.", "'rt32a_evil.")
}

// TestGuardFunctionsRetargetedToAnotherFloor: the functions' owner re-creates one of
// the guard's functions with exactly the text the guard installs, but for a floor (and
// copy) of its own, rt32a_evil's at 0, after the floor was raised to 100 — the trigger
// function (a stale UPDATE under 70 was accepted), the slow fence (a stale
// one-statement DELETE under 70 deleted the row), or the fast fence calling
// rt32a_evil's unmarked slow fence that answers 1 (the same). Each is a changed guard:
// schema.Check reports an own-trigger door and the fenced pool refuses (ErrSchema).
func TestGuardFunctionsRetargetedToAnotherFloor(t *testing.T) {
	for _, c := range []struct {
		name, fn, create, stmt string
		extra                  []string
		retarget               func(string) string
	}{
		{"trigger function", "public.fencedsql_guard_accounts()",
			"CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS ",
			"UPDATE accounts SET balance = 7 WHERE id = 1", nil, retargetFloor},
		{"slow fence", "public.fencedsql_fenced_accounts(bigint,bigint)",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql COST 1000 AS ",
			"DELETE FROM accounts WHERE id = 1", nil, retargetFloor},
		{"fast fence calling another schema's", "public.fencedsql_fence_accounts(bigint,bigint)",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql COST 1000 AS ",
			"DELETE FROM accounts WHERE id = 1",
			[]string{"CREATE FUNCTION rt32a_evil.fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS 'SELECT 1'"},
			func(src string) string { return strings.ReplaceAll(retargetFloor(src), "public.", "rt32a_evil.") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, evilFloor...)
			testdb.Exec(t, raw, c.extra...)
			var src string
			if err := raw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE oid = $1::regprocedure", c.fn).Scan(&src); err != nil {
				t.Fatal(err)
			}
			evil := c.retarget(src)
			if evil == src || strings.Contains(evil, "public.") {
				t.Fatalf("set-up: retargeting failed:\n%s", evil)
			}
			testdb.Exec(t, raw, c.create+"$rt32a$"+evil+"$rt32a$")
			fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorOwnTrigger, "function "))
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), c.stmt); !errors.Is(err, fencedsql.ErrBelowFloor) {
				t.Errorf("after the Fix, floor 100: %s under token 70: %v, want ErrBelowFloor", c.stmt, err)
			}
		})
	}
}

// TestGuardFunctionRetargetedBehindAFenceOfAnotherMarker (red-team rt46a F3): the
// owner re-creates the guard's trigger function for rt32a_evil's floor and re-creates
// the table's fast fence with another marker, so that no fence of this version is left
// to compare the guard's floor with. The fence in the table's own schema is judged
// whatever its marker while the guard is of this version: a changed guard, reported
// and refused; the Fix restores the floor.
func TestGuardFunctionRetargetedBehindAFenceOfAnotherMarker(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, evilFloor...)
	for _, fn := range []struct{ sig, create string }{
		{"public.fencedsql_guard_accounts()",
			"CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS "},
		{"public.fencedsql_fence_accounts(bigint,bigint)",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql COST 1000 AS "},
	} {
		var src string
		if err := raw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE oid = $1::regprocedure", fn.sig).Scan(&src); err != nil {
			t.Fatal(err)
		}
		evil := retargetFloor(src)
		if strings.Contains(fn.sig, "fence_") {
			evil = strings.Replace(src, "one-statement delete v", "one-statement delete (changed) v", 1)
		}
		if evil == src {
			t.Fatalf("set-up: %s unchanged", fn.sig)
		}
		testdb.Exec(t, raw, fn.create+"$rt46a$"+evil+"$rt46a$")
	}
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorOwnTrigger, "function "))
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 7 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after the Fix, floor 100: UPDATE under token 70: %v, want ErrBelowFloor", err)
	}
}
