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
			"CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v8 public.fencedsql_floor f fencedsql one-statement delete v5 */ RETURN NEW; END $x$",
			"function public.fencedsql_guard_accounts()",
			"UPDATE accounts SET balance = -1, fence_token = 1 WHERE id = 1"},
		{"trigger function lowers the floor",
			"CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v8 public.fencedsql_floor f fencedsql one-statement delete v5 */ UPDATE public.fencedsql_floor SET floor = 0; IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $x$",
			"function public.fencedsql_guard_accounts()",
			"UPDATE accounts SET balance = -1, fence_token = 1 WHERE id = 1"},
		{"fast fence answers 1",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS $x$ SELECT /* fencedsql one-statement delete v5 */ 1 $x$",
			"function public.fencedsql_fence_accounts(bigint, bigint)", ""},
		{"slow fence answers 1",
			"CREATE OR REPLACE FUNCTION public.fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql one-statement delete v5 */ RETURN 1; END $x$",
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
		"CREATE FUNCTION rt_gf.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v8 public.fencedsql_floor f fencedsql one-statement delete v5 */ RETURN NEW; END $x$",
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

// TestGuardWriterDisguisedAsAnotherTablesGuard: the guard-writer check leaves the guard
// triggers of every relation alone (each reads the floor's copy), once judged by the
// trigger's name, the function's name and its marker. A trigger named fencedsql_guard on
// an unguarded table of the guarded table's schema, running a function named
// fencedsql_guard_<that table> that carries the marker and deletes the tombstones of
// accounts, was passed over: a write to audit through the pool erased them. Only the
// guard's own text (for some fencing columns and floor schema) is left alone now.
func TestGuardWriterDisguisedAsAnotherTablesGuard(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw,
		"CREATE FUNCTION public.fencedsql_guard_audit() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $x$ BEGIN /* fencedsql guard v8 public.fencedsql_floor f fencedsql one-statement delete v5 */ DELETE FROM public.fencedsql_tomb_accounts; RETURN NULL; END $x$",
		"CREATE TRIGGER fencedsql_guard AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION public.fencedsql_guard_audit()")
	tombAttack(t, ctx, dsn, false, 90, "INSERT INTO audit (msg) VALUES ('x')")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
	// It carries a guard marker: reported as another relation's guard, with no Fix (a
	// DROP would unguard a real one); dropped by hand, the attack fails.
	if fix := requireDoorNoFix(t, ctx, dsn, dialect.SideDoorGuardWriter, "fencedsql_guard on public.audit"); len(fix) != 0 {
		t.Errorf("a guard-named trigger's door has a Fix %q", fix)
	}
	fixRestores(t, ctx, raw, []string{"DROP TRIGGER fencedsql_guard ON audit"})
	tombAttack(t, ctx, dsn, true, 90, "INSERT INTO audit (msg) VALUES ('y')")
}

// TestOtherTablesGuardsNotGuardWriters: the guards of other tables (their functions
// read the floor's copy), installed as the guard writes them — with other fencing
// column names, quoted ones included — are not guard writers of accounts.
func TestOtherTablesGuardsNotGuardWriters(t *testing.T) {
	ctx, _, raw := guardedAccounts(t,
		`CREATE TABLE other1 (id BIGINT PRIMARY KEY, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE other2 (id BIGINT PRIMARY KEY, "TokX" BIGINT NOT NULL DEFAULT 0, "V" BIGINT NOT NULL DEFAULT 0)`)
	reps, err := schema.Check(ctx, raw, postgres.Dialect,
		schema.GuardSpec{Table: "other1", TokenColumn: "tok", VersionColumn: "ver"},
		schema.GuardSpec{Table: "other2", TokenColumn: "TokX", VersionColumn: "V"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, raw, r.Fix...)
	}
	reps, err = schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"},
		schema.GuardSpec{Table: "other1", TokenColumn: "tok", VersionColumn: "ver"},
		schema.GuardSpec{Table: "other2", TokenColumn: "TokX", VersionColumn: "V"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.OK() || !r.Guarded {
			t.Errorf("%s: guarded %v, problems %q", r.Table, r.Guarded, r.Problems)
		}
	}
}

// TestEarlierGuardOfAnotherTableNoDropFix: another relation's guard whose function is
// not this version's text (an earlier release's: it reads the floor's copy) is a guard
// writer of accounts — it is judged by its body like any trigger — but its door carries
// no Fix: a DROP TRIGGER would leave that relation unguarded.
func TestEarlierGuardOfAnotherTableNoDropFix(t *testing.T) {
	ctx, _, raw := guardedAccounts(t, `CREATE TABLE other1 (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "other1"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	testdb.Exec(t, raw, "CREATE OR REPLACE FUNCTION public.fencedsql_guard_other1() RETURNS trigger LANGUAGE plpgsql AS $x$ BEGIN /* fencedsql guard v6 */ IF NEW.fence_token < pg_catalog.pg_sequence_last_value('public.fencedsql_floor_seq'::pg_catalog.regclass) THEN RAISE EXCEPTION 'below'; END IF; RETURN NEW; END $x$")
	reps, err = schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorGuardWriter && strings.Contains(sd.Object, "fencedsql_guard on public.other1") {
			found = true
			if len(sd.Fix) != 0 {
				t.Errorf("the door of another relation's earlier guard has a Fix %q: it would drop that guard", sd.Fix)
			}
		}
	}
	if !found {
		t.Errorf("another relation's guard of an earlier version: not reported (problems %q)", reps[0].Problems)
	}
}
