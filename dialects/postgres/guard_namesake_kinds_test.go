package postgres_test

import (
	"context"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// namesakeRoutineDDL creates, in public, a routine of kind carrying name.
func namesakeRoutineDDL(kind, name string) string {
	switch kind {
	case "procedure":
		return "CREATE PROCEDURE public." + name + "(x integer) LANGUAGE sql AS 'SELECT 1'"
	case "procedure-defaults":
		return "CREATE PROCEDURE public." + name + "(a bigint, b bigint, c integer DEFAULT 0) LANGUAGE sql AS 'SELECT 1'"
	case "aggregate":
		return "CREATE AGGREGATE public." + name + "(bigint) (SFUNC = int8pl, STYPE = bigint)"
	case "window":
		return "CREATE FUNCTION public." + name + "(bigint) RETURNS bigint LANGUAGE internal WINDOW AS 'window_row_number'"
	default: // function
		return "CREATE FUNCTION public." + name + "(x integer) RETURNS integer LANGUAGE sql AS 'SELECT 1'"
	}
}

// namesakeRoutineRun guards accounts, adds the routine of kind named name, and
// checks what must hold beside it: schema.Check reports it (naming its kind); the
// current holder's DELETE deletes (a namesake is reported by Check only, red-team
// rt58a F2); a stale holder's DELETE is ErrFenced; -apply converges and drops it.
func namesakeRoutineRun(t *testing.T, kind, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn, raw := namesakeAccounts(t, ctx)
	spec := schema.GuardSpec{Table: "accounts"}
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1), (2, 100, 20, 1)")
	testdb.Exec(t, raw, namesakeRoutineDDL(kind, name))
	var oid uint32
	if err := raw.QueryRowContext(ctx, "SELECT max(oid)::oid FROM pg_proc WHERE proname = $1 AND pronamespace = 'public'::regnamespace", name).Scan(&oid); err != nil {
		t.Fatal(err)
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"procedure": "procedure ", "procedure-defaults": "procedure ", "aggregate": "aggregate ", "window": "window function "}[kind]
	if want == "" {
		want = "function "
	}
	if p := strings.Join(fencetest.ReportProblems(reps), "\n"); !strings.Contains(p, "the "+want+"public."+name+"(") && !strings.Contains(p, "the "+want+name+"(") {
		t.Errorf("Check beside the %s %s: %q; want it reported as a namesake", kind, name, p)
	}
	fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM accounts WHERE id = $1", 2); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale DELETE beside the %s %s: %v; want ErrFenced", kind, name, err)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), "DELETE FROM accounts WHERE id = $1", 1); err != nil {
		t.Errorf("the holder's DELETE beside the %s %s: %v; want it deleted", kind, name, err)
	}
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
		t.Errorf("-apply beside the %s %s: %v %q; want it to converge", kind, name, err, fencetest.ReportProblems(reps))
	}
	var left int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM pg_proc WHERE oid = $1", oid).Scan(&left); err != nil || left != 0 {
		t.Errorf("the %s %s after -apply: %d left (%v); want it dropped", kind, name, left, err)
	}
}

// TestGuardNamesakeOfAnyKindFixConverges (red-team rt58a F1): a procedure, an
// aggregate or a window function carrying the name of a guard-owned function (the
// fences, the guard function, the views' refusal, the floor's sync function, the
// tombstone function, the recorder) in the table's schema — what anyone with CREATE
// on the schema may add. The Fix had run DROP FUNCTION on it, which PostgreSQL
// refuses for a procedure or an aggregate (42809): -apply never converged. Generator:
// seeded kind x name; trial 0 is always a procedure of the fence's name.
func TestGuardNamesakeOfAnyKindFixConverges(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	names := []string{"fencedsql_fence_accounts", "fencedsql_fenced_accounts", "fencedsql_guard_accounts", "fencedsql_refuse_write", "fencedsql_floor_sync", "fencedsql_tombstone_accounts", "fencedsql_tombclaim_accounts"}
	kinds := []string{"procedure", "procedure-defaults", "aggregate", "window"}
	seen := map[string]bool{}
	for trial := 0; trial < 6; trial++ {
		kind, name := kinds[rng.Intn(len(kinds))], names[rng.Intn(len(names))]
		if trial == 0 {
			kind, name = "procedure", "fencedsql_fence_accounts"
		}
		if seen[kind+" "+name] {
			continue
		}
		seen[kind+" "+name] = true
		t.Run(kind+" "+name, func(t *testing.T) { namesakeRoutineRun(t, kind, name) })
	}
}

// TestTombstoneNamesakeStopsNoWrite (red-team rt58a F2): a function overload (another
// signature) of the tombstone function's or the recorder's name in the table's
// schema had been judged the guard's own changed object (guardObjects), which the
// lazy check refuses on: every write of the table, the current holder's too, was
// refused, and for the tombstone function's name the Fix left the overload, so -apply
// never converged. Triggers run the tombstone function by oid, the recorder is called
// with exactly typed arguments (AbsenceCall): the overload is a namesake, reported by
// Check only, and dropped by its Fix.
func TestTombstoneNamesakeStopsNoWrite(t *testing.T) {
	for _, name := range []string{"fencedsql_tombstone_accounts", "fencedsql_tombclaim_accounts"} {
		t.Run(name, func(t *testing.T) { namesakeRoutineRun(t, "function", name) })
	}
}
