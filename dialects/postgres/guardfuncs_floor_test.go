package postgres_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
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

// rt32aEvilFloor creates a schema rt32a_evil holding a floor table (floor 0) and a
// floor sequence never advanced: a floor the functions' owner controls.
var rt32aEvilFloor = []string{
	"CREATE SCHEMA rt32a_evil",
	"CREATE TABLE rt32a_evil.fencedsql_floor (id integer PRIMARY KEY, floor bigint NOT NULL)",
	"INSERT INTO rt32a_evil.fencedsql_floor VALUES (1, 0)",
	"CREATE SEQUENCE rt32a_evil.fencedsql_floor_seq MINVALUE 0 START 0",
}

// rt32aRetarget returns src with every name of the public floor replaced by the
// rt32a_evil one: the very text the guard installs, for another floor's schema.
func rt32aRetarget(src string) string {
	src = strings.ReplaceAll(src, "public.fencedsql_floor", "rt32a_evil.fencedsql_floor")
	return strings.ReplaceAll(src, "'public.", "'rt32a_evil.")
}

// TestGuardFunctionReadsAnotherFloor: the functions' owner re-creates
// public.fencedsql_guard_accounts() with exactly the text the guard installs, but for
// a floor schema of its own (rt32a_evil: floor 0). guardFunctions accepts any schema
// the text names (ownFunctionText extracts it and only checks consistency), so
// schema.Check reports the table OK and the fenced pool writes under token 70 although
// the token floor (public.fencedsql_floor, the floor RaiseTokenFloor raised) is 100.
// Right behaviour: the guard function reading a floor other than the one the
// installation's floor tools keep (or, at least, one in a schema other than the
// function's own / the floor the table's guard was installed with) is an own-trigger
// door (or the write is refused by the floor): the UPDATE under 70 must fail.
func TestGuardFunctionReadsAnotherFloor(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, rt32aEvilFloor...)
	var src string
	if err := raw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE oid = 'public.fencedsql_guard_accounts()'::regprocedure").Scan(&src); err != nil {
		t.Fatal(err)
	}
	evil := rt32aRetarget(src)
	if evil == src || strings.Contains(evil, "public.") {
		t.Fatalf("set-up: retargeting failed:\n%s", evil)
	}
	testdb.Exec(t, raw, "CREATE OR REPLACE FUNCTION public.fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $rt32a$"+evil+"$rt32a$")

	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schema.Check: OK=%v guarded=%v problems=%q", reps[0].OK(), reps[0].Guarded, reps[0].Problems)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 7 WHERE id = 1")
	if err == nil {
		var tok int64
		_ = raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok)
		t.Errorf("FAIL-OPEN: schema.Check OK=%v, and the fenced UPDATE under token 70, below the floor 100, was accepted (row token now %d)", reps[0].OK(), tok)
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestGuardFastFenceCallsAnotherSchema: the functions' owner re-creates the fast
// fence public.fencedsql_fence_accounts(bigint, bigint) with exactly the library's text
// for the schema rt32a_evil: it reads rt32a_evil's floor copy and calls
// rt32a_evil.fencedsql_fenced_accounts, a function without the marker that answers 1.
// guardFunctions takes the schema the fast fence's text names as the one whose slow
// fence to judge, and skips a slow fence without the marker; DeleteFenceQuery judges
// the untouched public slow fence. A stale holder (token 70, row written under 60,
// floor raised to 100) deletes the row in one statement: the row guard's DELETE trigger
// does not fire for a row at or below the marked token, so the floor is never read.
// Right behaviour: a door (or ErrFloor-like refusal); the DELETE must fail.
func TestGuardFastFenceCallsAnotherSchema(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, rt32aEvilFloor...)
	testdb.Exec(t, raw, "CREATE FUNCTION rt32a_evil.fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS 'SELECT 1'")
	var src string
	if err := raw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE oid = 'public.fencedsql_fence_accounts(bigint,bigint)'::regprocedure").Scan(&src); err != nil {
		t.Fatal(err)
	}
	evil := strings.ReplaceAll(rt32aRetarget(src), "public.", "rt32a_evil.")
	if evil == src {
		t.Fatalf("set-up: retargeting failed:\n%s", evil)
	}
	t.Logf("fast fence now: %s", evil)
	testdb.Exec(t, raw, "CREATE OR REPLACE FUNCTION public.fencedsql_fence_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql COST 1000 AS $rt32a$"+evil+"$rt32a$")

	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schema.Check: OK=%v guarded=%v problems=%q", reps[0].OK(), reps[0].Guarded, reps[0].Problems)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	res, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1")
	if err == nil {
		n, _ := res.RowsAffected()
		t.Errorf("FAIL-OPEN: schema.Check OK=%v, and the fenced DELETE under token 70, below the floor 100, was accepted (%d rows deleted)", reps[0].OK(), n)
	} else {
		t.Logf("refused: %v", err)
	}
}

// TestGuardSlowFenceReadsAnotherFloor: the slow fence
// public.fencedsql_fenced_accounts(bigint, bigint), re-created by the functions' owner
// with the library's exact text for the floor schema rt32a_evil (floor 0), is accepted
// by guardFunctions (fenceMatches takes whatever schema the text names, without
// comparing it with the schema the fast fence calls or the floor the guard trigger
// reads). A stale holder (token 70, row written under 60, floor raised to 100) deletes
// the row in one statement: both the mark's fence(70, 70) and the row's fence(60, 70)
// reach the slow fence, which reads rt32a_evil's floor. Right behaviour: an own-trigger
// door (the fence reads another floor than the table's guard); the DELETE must fail.
func TestGuardSlowFenceReadsAnotherFloor(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, rt32aEvilFloor...)
	var src string
	if err := raw.QueryRowContext(ctx, "SELECT prosrc FROM pg_proc WHERE oid = 'public.fencedsql_fenced_accounts(bigint,bigint)'::regprocedure").Scan(&src); err != nil {
		t.Fatal(err)
	}
	evil := rt32aRetarget(src)
	if evil == src || strings.Contains(evil, "public.") {
		t.Fatalf("set-up: retargeting failed:\n%s", evil)
	}
	testdb.Exec(t, raw, "CREATE OR REPLACE FUNCTION public.fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql COST 1000 AS $rt32a$"+evil+"$rt32a$")

	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("schema.Check: OK=%v guarded=%v problems=%q", reps[0].OK(), reps[0].Guarded, reps[0].Problems)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	res, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1")
	if err == nil {
		n, _ := res.RowsAffected()
		t.Errorf("FAIL-OPEN: schema.Check OK=%v, and the fenced DELETE under token 70, below the floor 100, was accepted (%d rows deleted)", reps[0].OK(), n)
	} else {
		t.Logf("refused: %v", err)
	}
}
