package postgres_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt48a F1, F2: a SECURITY DEFINER routine others may run, a trigger on
// another table or an event trigger whose body drops, replaces or renames one of the
// guard's functions (the tombstone function, the guard's trigger function, the fences,
// the recorder, the floor's sync function, the views' refusal) — in DDL or dynamic
// SQL — or holds object-wide DDL (DROP OWNED, DROP … CASCADE, …) takes the guard away
// when a statement through the pool runs it. Each is a guard-writer door: reported by
// schema.Check with its Fix, refused by the pool's lazy check.

// guardFunctionKillers are bodies of rt48a_kill(), a SECURITY DEFINER function that
// PUBLIC may execute (the default). attack: whether calling it through the pool is
// safe to try in the test's database (the object-wide ones are only judged).
var guardFunctionKillers = map[string]struct {
	ddl    string
	attack bool
}{
	"DropTombFunctionCascade":         {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP FUNCTION public.fencedsql_tombstone_accounts() CASCADE; END $$`, true},
	"DropTombFunctionUnqualified":     {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP FUNCTION fencedsql_tombstone_accounts CASCADE; END $$`, true},
	"ReplaceTombFunction":             {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $f$ BEGIN EXECUTE 'CREATE OR REPLACE FUNCTION public.fencedsql_tombstone_accounts() RETURNS trigger LANGUAGE plpgsql AS $b$ BEGIN RETURN NULL; END $b$'; END $f$`, true},
	"DropTombFunctionThroughVariable": {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ DECLARE q text := 'DROP FUNCTION fencedsql_tombstone_accounts() CASCADE'; BEGIN EXECUTE q; END $$`, true},
	"DropGuardFunctionCascade":        {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP FUNCTION fencedsql_guard_accounts() CASCADE; END $$`, true},
	"ReplaceGuardFunction":            {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $f$ BEGIN EXECUTE 'CREATE OR REPLACE FUNCTION fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $b$ BEGIN RETURN NEW; END $b$'; END $f$`, true},
	"ReplaceFenceFunction":            {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $f$ BEGIN EXECUTE 'CREATE OR REPLACE FUNCTION fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql AS $b$ BEGIN RETURN 1; END $b$'; END $f$`, true},
	"RenameRecorder":                  {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN ALTER ROUTINE fencedsql_tombclaim_accounts RENAME TO rt48a_old; END $$`, false},
	"DropFloorSync":                   {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP FUNCTION fencedsql_floor_sync() CASCADE; END $$`, false},
	"DropOwned":                       {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP OWNED BY CURRENT_USER; END $$`, false},
	"ReassignOwnedDynamic":            {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN EXECUTE 'REASSIGN OWNED BY ' || quote_ident(current_user) || ' TO rt48a_nobody'; END $$`, false},
	"DropSchemaCascade":               {`CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP SCHEMA public CASCADE; END $$`, false},
	"DropPlpgsqlCascade":              {`CREATE PROCEDURE rt48a_kill() LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP EXTENSION plpgsql CASCADE; END $$`, false},
}

// TestGuardFunctionWriterRoutineReported: each killer is a guard-writer door whose Fix
// (REVOKE EXECUTE) clears it; where safe, the attack through the pool (DELETE under
// 100, SELECT rt48a_kill(), stale INSERT under 90) is refused.
func TestGuardFunctionWriterRoutineReported(t *testing.T) {
	for name, k := range guardFunctionKillers {
		t.Run(name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, k.ddl)
			if k.attack {
				tombAttack(t, ctx, dsn, false, 0, "SELECT rt48a_kill()")
				testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
			}
			object := "function public.rt48a_kill()"
			if strings.HasPrefix(k.ddl, "CREATE PROCEDURE") {
				object = "procedure public.rt48a_kill()"
			}
			fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, object))
		})
	}
}

// TestGuardTriggerKillerRoutineReported: a SECURITY DEFINER function that drops or
// disables the tombstone guard's trigger names the guarded table: a routine door
// (bodyShadows, bodyWrites), which the pool refuses; the attack through it fails.
func TestGuardTriggerKillerRoutineReported(t *testing.T) {
	for name, ddl := range map[string]string{
		"DropTombInsertTrigger":    `CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP TRIGGER fencedsql_tombstone_insert ON public."accounts"; END $$`,
		"DisableTombInsertTrigger": `CREATE FUNCTION rt48a_kill() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN ALTER TABLE public."accounts" DISABLE TRIGGER fencedsql_tombstone_insert; END $$`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, ddl)
			requireDoorNoFix(t, ctx, dsn, dialect.SideDoorRoutine, "function public.rt48a_kill()")
			tombAttack(t, ctx, dsn, false, 0, "SELECT rt48a_kill()")
		})
	}
}

// TestGuardFunctionWriterTriggerReported: the tombstone function dropped by a trigger
// on an unguarded table (an INSERT into it through the pool runs it) is a guard-writer
// door; DROP TRIGGER clears it.
func TestGuardFunctionWriterTriggerReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, `CREATE TABLE rt48a_log (x int)`)
	testdb.Exec(t, raw,
		`CREATE FUNCTION rt48a_trg() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DROP FUNCTION fencedsql_tombstone_accounts() CASCADE; RETURN NULL; END $$`,
		`CREATE TRIGGER rt48a_trg AFTER INSERT ON rt48a_log FOR EACH ROW EXECUTE FUNCTION rt48a_trg()`)
	tombAttack(t, ctx, dsn, false, 0, "INSERT INTO rt48a_log VALUES (1)")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "rt48a_trg on public.rt48a_log"))
}

// TestGuardFunctionWriterEventTriggerReported: the same in an event trigger (any DDL
// through the pool, CREATE TEMP TABLE included, runs it); DROP EVENT TRIGGER clears
// it. The event trigger is per database; the test's database is its own.
func TestGuardFunctionWriterEventTriggerReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		`CREATE FUNCTION rt48a_evt() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN IF pg_catalog.to_regproc('public.fencedsql_tombstone_accounts') IS NOT NULL THEN DROP FUNCTION public.fencedsql_tombstone_accounts() CASCADE; END IF; END $$`,
		`CREATE EVENT TRIGGER rt48a_evt ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION rt48a_evt()`)
	t.Cleanup(func() { raw.Exec(`DROP EVENT TRIGGER IF EXISTS rt48a_evt`) })
	tombAttack(t, ctx, dsn, false, 0, "CREATE TEMP TABLE rt48a_tmp (x int)")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 100, 1) ON CONFLICT (id) DO NOTHING")
	fixRestores(t, ctx, raw, requireDoor(t, ctx, dsn, dialect.SideDoorGuardWriter, "event trigger rt48a_evt"))
}
