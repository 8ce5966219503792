package postgres_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The guard's own functions re-created by their owner with this version's marker kept
// (the guard writers' "known open" item until the fourteenth session): each is
// compared whole with the text the guard installs, a changed one is an "own trigger"
// door with the guard's DDL as Fix, the fenced pool refuses the table, and after the
// Fix the stale write the change let through is refused again.

// TestGuardFunctionReplacedKeepingMarker: the trigger function accepting everything
// (RETURN NEW after the marker) let a plain UPDATE lower the token; the fast fence
// answering 1 let a stale one-statement DELETE through; the slow fence answering 1
// likewise for a row of a newer token.
func TestGuardFunctionReplacedKeepingMarker(t *testing.T) {
	for _, c := range []struct {
		name, replace, object string
		// stale is a write the change lets through and the restored guard refuses.
		stale string
	}{
		{"trigger function accepts all",
			"CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v7 public.fencedsql_floor f fencedsql one-statement delete v4 */ RETURN NEW; END $x$",
			"function public.fencedsql_guard_accounts()",
			"UPDATE accounts SET balance = -1, fence_token = 1 WHERE id = 1"},
		{"trigger function lowers the floor",
			"CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v7 public.fencedsql_floor f fencedsql one-statement delete v4 */ UPDATE public.fencedsql_floor SET floor = 0; IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $x$",
			"function public.fencedsql_guard_accounts()",
			"UPDATE accounts SET balance = -1, fence_token = 1 WHERE id = 1"},
		{"fast fence answers 1",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS $x$ SELECT /* fencedsql one-statement delete v4 */ 1 $x$",
			"function public.fencedsql_fence_accounts(bigint, bigint)", ""},
		{"slow fence answers 1",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql one-statement delete v4 */ RETURN 1; END $x$",
			"function public.fencedsql_fenced_accounts(bigint, bigint)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, c.replace)
			fix := requireDoor(t, ctx, dsn, dialect.SideDoorOwnTrigger, c.object)
			fixRestores(t, ctx, raw, fix)
			if c.stale != "" {
				if _, err := raw.ExecContext(ctx, c.stale); err == nil {
					t.Errorf("after the Fix: %s (a lowered token) was accepted", c.stale)
				}
			}
			// The one-statement DELETE under a token older than the row's is refused.
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM accounts WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("after the Fix: DELETE under token 10 of a row written under 60: %v, want ErrFenced", err)
			}
		})
	}
}

// TestGuardTriggerRunsAnotherSchemasFunction: a guard trigger re-pointed at a function
// of the guard's name and text in another schema whose body differs is judged by that
// function's text.
func TestGuardTriggerRunsAnotherSchemasFunction(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		"CREATE SCHEMA rt_gf",
		"CREATE FUNCTION rt_gf.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v7 public.fencedsql_floor f fencedsql one-statement delete v4 */ RETURN NEW; END $x$",
		"DROP TRIGGER fencedsql_guard ON accounts",
		"CREATE TRIGGER fencedsql_guard BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION rt_gf.fencedsql_guard_accounts()",
		"ALTER TABLE accounts ENABLE ALWAYS TRIGGER fencedsql_guard")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorOwnTrigger, "function rt_gf.fencedsql_guard_accounts()"))
}

// TestGuardFunctionsInOddSchemaNotReported: the guard installed from a schema whose
// name needs quoting (a quote, a backslash: the floor's copy is named in a
// string literal quote_literal wrote with an E prefix) is the text the guard writes:
// no door, and a fenced write goes through.
func TestGuardFunctionsInOddSchemaNotReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	const sch = `odd'sch\ema`
	q := `"` + sch + `"`
	testdb.Exec(t, raw, "CREATE SCHEMA "+q, "GRANT ALL ON SCHEMA "+q+" TO PUBLIC",
		"CREATE TABLE "+q+".accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	v := u.Query()
	v.Set("search_path", q)
	u.RawQuery = v.Encode()
	odd := u.String()
	oraw := testdb.Open(t, "pgx", odd)
	reps, err := schema.Check(ctx, oraw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, oraw, reps[0].Fix...)
	reps, err = schema.Check(ctx, oraw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil || !reps[0].OK() || !reps[0].Guarded {
		t.Fatalf("after the Fix in schema %s: %v, guarded %v, problems %q", q, err, reps[0].Guarded, reps[0].Problems)
	}
	var src string
	if err := oraw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_fence_accounts' AND pronamespace = $1::regnamespace", q).Scan(&src); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(src, `E'`) {
		t.Fatalf("set-up: the fence's text names the floor's copy without an E'' literal: %s", src)
	}
	db := testdb.Open(t, "fenced-pgx", odd+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "INSERT INTO accounts (id, balance) VALUES (1, 1)"); err != nil {
		t.Fatalf("fenced INSERT: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 71), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
}

// TestGuardFunctionOlderMarkerNotInstalled: a guard function whose text carries an
// older version's marker is the "not installed" of GuardInstalledQuery (schema.Check
// reports the guard missing, its Fix installs this version), not a changed guard.
func TestGuardFunctionOlderMarkerNotInstalled(t *testing.T) {
	ctx, _, raw := guardedAccounts(t)
	testdb.Exec(t, raw, "CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v6 */ RETURN NEW; END $x$")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Guarded {
		t.Errorf("a guard function of an older marker: reported guarded")
	}
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorOwnTrigger {
			t.Errorf("a guard function of an older marker reported as a changed guard: %+v", sd)
		}
	}
}
