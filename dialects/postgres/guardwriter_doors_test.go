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

// Red-team rt29a's PostgreSQL findings F1-F5, F9, F11, F12 (FINDINGS-rt29a.md): doors to
// the guards' own objects — the tombstone table, the token floor and its copy — that
// the guard-writer check (otherTriggers) did not see.

// TestTombWriterNamedLikeOwnTriggerReported: the guard-writer check skips any trigger named
// fencedsql_tombstone_delete/_insert/_rekey whose function is named
// fencedsql_tombstone_accounts in a schema holding a table named accounts — but that
// schema may be any schema. A trigger of that name on an unguarded table whose
// function (in a schema rt29a_x with a dummy table "accounts") deletes every tombstone
// of public.accounts is not reported: the stale holder re-inserts a deleted key.
// Right behaviour: the exclusion must hold only for the library's own function (its
// body as the tombstone guard writes it for that schema's table, or at least a
// function that writes only its own schema's tombstone table), so schema.Check reports
// a SideDoorGuardWriter and the lazy check refuses accounts with ErrSchema.
func TestTombWriterNamedLikeOwnTriggerReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw,
		"CREATE SCHEMA rt29a_x",
		"CREATE TABLE rt29a_x.accounts (id int)",
		"CREATE FUNCTION rt29a_x.fencedsql_tombstone_accounts() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM public.fencedsql_tomb_accounts; RETURN NULL; END $$",
		"CREATE TRIGGER fencedsql_tombstone_delete AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION rt29a_x.fencedsql_tombstone_accounts()")
	// Demonstrate the attack: delete under 100, trigger erases the tombstone, stale insert under 90.
	tombAttack(t, ctx, dsn, false, 90, "INSERT INTO audit (msg) VALUES ('x')")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "fencedsql_tombstone_delete on public.audit"))
}

// TestFloorWriterNamedLikeGuardReported: the floor-writer check skips any function named
// fencedsql_guard_% whose text contains the guard version marker ("fencedsql guard v"),
// which a comment supplies. A trigger on an unguarded table running such a function
// that lowers the floor is not reported, and a writer below the raised floor writes.
// Right behaviour: only the library's own guard functions (the guard trigger's
// function of a guarded table, text as written) are skipped; schema.Check reports a
// SideDoorGuardWriter and the lazy check refuses accounts with ErrSchema.
func TestFloorWriterNamedLikeGuardReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw,
		"CREATE FUNCTION fencedsql_guard_rt29a() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN /* fencedsql guard v9 */ UPDATE public.fencedsql_floor SET floor = 0; RETURN NULL; END $$",
		"CREATE TRIGGER rt29a_lower AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION fencedsql_guard_rt29a()")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(ctx, "INSERT INTO audit (msg) VALUES ('x')"); err != nil {
		t.Logf("INSERT audit: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, -1)"); !errors.Is(err, fencedsql.ErrBelowFloor) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("write under token 20 below floor 50: %v, want ErrBelowFloor or ErrSchema", err)
	}
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "rt29a_lower on public.audit"))
}

// TestRuleWritingTombstoneTableReported: a rule on an unguarded table (DO ALSO DELETE FROM
// the tombstone table) is the guard writer the trigger check looks for, in another
// form: the rule's action runs with the rule owner's rights (the table owner's) on
// every INSERT into audit, through the pool too, and erases the tombstones of
// accounts. Right behaviour: a rule anywhere whose action writes a guard table is a
// SideDoorGuardWriter (schema.Check reports it with DROP RULE as Fix; the lazy check
// refuses accounts with ErrSchema), and the stale INSERT below is refused.
func TestRuleWritingTombstoneTableReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	testdb.Exec(t, raw, "CREATE RULE rt29a_r AS ON INSERT TO audit DO ALSO DELETE FROM public.fencedsql_tomb_accounts")
	tombAttack(t, ctx, dsn, false, 0, "INSERT INTO audit (msg) VALUES ('x')")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "rt29a_r on public.audit"))
}

// TestTriggerWritingTombstoneTableThroughViewReported: an automatically updatable view
// over the tombstone table, and a trigger on an unguarded table whose SECURITY DEFINER
// function deletes from the view: the function's body does not name the tombstone
// table, so the guard-writer check (a body test for the guard table's name) passes
// it, and every INSERT into audit through the pool erases the tombstones of accounts.
// Right behaviour: a view over a guard table (auto-updatable, or with an INSTEAD OF
// trigger or rule) is itself a door (or a writer of such a view is a guard writer):
// schema.Check reports it, the lazy check refuses accounts (ErrSchema), and the stale
// INSERT is refused.
func TestTriggerWritingTombstoneTableThroughViewReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	testdb.Exec(t, raw,
		"CREATE VIEW rt29a_tv AS SELECT * FROM public.fencedsql_tomb_accounts",
		"CREATE FUNCTION rt29a_audit() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM public.rt29a_tv; RETURN NULL; END $$",
		"CREATE TRIGGER rt29a_audit AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION rt29a_audit()")
	tombAttack(t, ctx, dsn, false, 0, "INSERT INTO audit (msg) VALUES ('x')")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardTable, "public.rt29a_tv"))
}

// TestTriggerSwappingTombstoneTableByDDLReported: the guard-writer check is a word test for
// data-changing statements (INSERT, UPDATE, DELETE, TRUNCATE, …) naming a guard table;
// a trigger function that swaps the tombstone table by DDL — ALTER TABLE … RENAME,
// then CREATE TABLE … (LIKE … INCLUDING ALL) — writes no row, yet leaves an empty
// tombstone table of the very shape the guards create (so guardTables is satisfied
// too). On every INSERT into audit through the pool (SECURITY DEFINER, owned by the
// tables' owner) the tombstones of accounts are gone. Right behaviour: a trigger
// whose function names a guard table in any statement but a plain read (ALTER, DROP,
// CREATE … LIKE, RENAME) is a SideDoorGuardWriter; the lazy check refuses accounts
// (ErrSchema), and the stale INSERT is refused.
func TestTriggerSwappingTombstoneTableByDDLReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	testdb.Exec(t, raw,
		`CREATE FUNCTION rt29a_swap() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN
  ALTER TABLE public.fencedsql_tomb_accounts RENAME TO rt29a_old;
  CREATE TABLE public.fencedsql_tomb_accounts (LIKE public.rt29a_old INCLUDING ALL);
  RETURN NULL; END $$`,
		"CREATE TRIGGER rt29a_swap AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION rt29a_swap()")
	fix := requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "rt29a_swap on public.audit")
	tombAttack(t, ctx, dsn, false, 0, "INSERT INTO audit (msg) VALUES ('x')")
	fixRestores(t, ctx, raw, fix)
}

// TestTriggerLoweringFloorCopyReported: the guards' fast path accepts any token at or above
// the floor's copy (the sequence fencedsql_floor_seq, pg_sequence_last_value), without
// reading the floor table. A SECURITY DEFINER trigger function on an unguarded table
// that runs `setval('public.fencedsql_floor_seq', 1)` names neither guard table as a
// written table (setval is no write word, and fencedsql_floor_seq is not the word
// fencedsql_floor), so the guard-writer check passes it; after a raise to 50, one INSERT
// into audit through the pool lowers the copy and a write under token 20 is accepted.
// Right behaviour: a trigger (or rule) whose function names the floor's sequence (or
// calls setval/nextval on it) is a SideDoorGuardWriter (schema.Check reports it, the
// lazy check refuses accounts with ErrSchema); the write under 20 is refused.
func TestTriggerLoweringFloorCopyReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt29a_copy() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN PERFORM pg_catalog.setval('public.fencedsql_floor_seq', 1); RETURN NULL; END $$",
		"CREATE TRIGGER rt29a_copy AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION rt29a_copy()")
	fix := requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "rt29a_copy on public.audit")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(ctx, "INSERT INTO audit (msg) VALUES ('x')"); err != nil {
		t.Logf("INSERT audit: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, -1)"); !errors.Is(err, fencedsql.ErrBelowFloor) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("write under token 20 after a raise to 50 and the copy lowered: %v, want ErrBelowFloor or ErrSchema", err)
	}
	// The Fix drops the trigger; the copy it lowered stays below the floor until the
	// floor's row is written again: schema.Check reports that (red-team rt50a F1's
	// class, floorCopied), and a raise puts the copy back.
	testdb.Exec(t, raw, fix...)
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range reps[0].Problems {
		if !strings.Contains(p, "copy, which the guards' fast path reads, is below its floor") {
			t.Errorf("after the Fix: problem %q; want only the stale copy", p)
		}
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	fixRestores(t, ctx, raw, nil)
}

// TestEventTriggerWritingTombstoneTableReported: an event trigger (ddl_command_end) whose
// function deletes from the tombstone table is not in pg_trigger, so the guard-writer
// check never sees it. The pool sends DDL without a token (CREATE TEMP TABLE is
// accepted), so any session of the application erases the tombstones of accounts with
// one CREATE TEMP TABLE, and the stale holder (90) re-inserts key 1 deleted under 100.
// Right behaviour: an enabled event trigger whose function writes (or names) a guard
// table is a SideDoorGuardWriter (schema.Check reports it with DROP EVENT TRIGGER as
// Fix; the lazy check refuses accounts with ErrSchema), and the stale INSERT is refused.
func TestEventTriggerWritingTombstoneTableReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		"CREATE FUNCTION rt29a_evt() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM public.fencedsql_tomb_accounts; END $$",
		"CREATE EVENT TRIGGER rt29a_evt ON ddl_command_end EXECUTE FUNCTION rt29a_evt()")
	t.Cleanup(func() { raw.Exec("DROP EVENT TRIGGER IF EXISTS rt29a_evt") })
	fix := requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "event trigger rt29a_evt")
	tombAttack(t, ctx, dsn, false, 0, "CREATE TEMP TABLE rt29a_tmp (x int)")
	fixRestores(t, ctx, raw, fix)
}

// TestSecurityDefinerRoutineWritingTombstoneTableReported: the guard-writer check covers
// triggers only. A SECURITY DEFINER function that deletes from the tombstone table, and
// that PUBLIC may execute (the default for a new function), erases the tombstones with
// the owner's rights when the application calls it through the pool (`SELECT
// rt29a_wipe()` is sent as written, with or without a token), exactly as the trigger of
// rt27c F7 did on an INSERT. Right behaviour: a routine whose body writes a guard table
// and that runs with another role's rights (SECURITY DEFINER) and is executable by
// others is reported (SideDoorGuardWriter, or a privilege problem naming it, Fix
// REVOKE EXECUTE … FROM PUBLIC / DROP FUNCTION), and the lazy check refuses accounts.
func TestSecurityDefinerRoutineWritingTombstoneTableReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw, "CREATE FUNCTION rt29a_wipe() RETURNS void LANGUAGE sql SECURITY DEFINER AS 'DELETE FROM public.fencedsql_tomb_accounts'")
	fix := requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "function public.rt29a_wipe()")
	tombAttack(t, ctx, dsn, false, 0, "SELECT rt29a_wipe()")
	fixRestores(t, ctx, raw, fix)
}

// TestGuardWriterOwnNamesOnOtherSchemaTable (rt29a F1): the disguise of F1 on the
// same-named table of the other schema itself — a trigger fencedsql_tombstone_delete on
// rt29a_x.accounts calling rt29a_x.fencedsql_tombstone_accounts() with the library's
// pinned search_path, as the tombstone guard of rt29a_x.accounts would — is judged:
// its body names public's tombstone table (schema public), so it is a guard writer of
// public.accounts. (The library's own triggers of a same-named guarded table in
// another schema write that schema's tombstone table and are not reported: rt21a.)
func TestGuardWriterOwnNamesOnOtherSchemaTable(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		"CREATE SCHEMA rt29a_x",
		"CREATE TABLE rt29a_x.accounts (id int)",
		"CREATE FUNCTION rt29a_x.fencedsql_tombstone_accounts() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$ BEGIN DELETE FROM public.fencedsql_tomb_accounts; RETURN NULL; END $$",
		"CREATE TRIGGER fencedsql_tombstone_delete AFTER INSERT ON rt29a_x.accounts FOR EACH ROW EXECUTE FUNCTION rt29a_x.fencedsql_tombstone_accounts()")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "fencedsql_tombstone_delete on rt29a_x.accounts"))
}

// TestGuardWriterRuleSetsFloorCopy (rt29a F3, F9): a rule on another table whose action
// lowers the floor's copy (setval on fencedsql_floor_seq) is a guard writer.
func TestGuardWriterRuleSetsFloorCopy(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	testdb.Exec(t, raw, "CREATE RULE rt29a_seq AS ON INSERT TO audit DO ALSO SELECT pg_catalog.setval('public.fencedsql_floor_seq', 1)")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "rt29a_seq on public.audit"))
}
