package postgres_test

// Bodies read under both standard_conforming_strings settings (red-team rt47a F1,
// bodyreadings.go): a function with SET standard_conforming_strings = off, or one run
// in a session with the setting off, reads a literal of one backslash-escaped quote as
// a one-quote string, where the "on" reading sees a literal ending at the backslash
// and the next quote opening another: whatever stands between two such literals is a
// string to the "on" reading and code to the server. Every door check reads such a
// body both ways and reports the worse verdict.

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// scsOff is the SET clause of a trigger function read with standard_conforming_strings
// off (a function-level setting any function owner may attach).
const scsOff = "SET standard_conforming_strings = off"

// TestSCSOffTriggerBodyReadBothWays: a BEFORE INSERT trigger function carrying SET
// standard_conforming_strings = off whose body replaces NEW whole (or sets
// NEW.fence_token) between two escaped-quote literals is reported, and the stale
// INSERT of a deleted key refused (before the fix: no problem, the row stored).
func TestSCSOffTriggerBodyReadBothWays(t *testing.T) {
	for name, c := range map[string]struct{ event, body string }{
		"InsertNewReplaced": {"INSERT", `DECLARE x text; BEGIN x := '\''; NEW := ROW(NEW.id, NEW.balance, 9000000000000000000, 1::bigint); x := '\''; RETURN NEW; END`},
		"InsertTokenColumn": {"INSERT", `DECLARE x text; BEGIN x := '\''; NEW.fence_token := 9000000000000000000; x := '\''; RETURN NEW; END`},
		"InsertOrUpdate":    {"INSERT OR UPDATE", `DECLARE x text; BEGIN x := '\''; NEW := ROW(NEW.id, NEW.balance, 9000000000000000000, 1::bigint); x := '\''; RETURN NEW; END`},
	} {
		t.Run(name, func(t *testing.T) {
			probs, err, n := stampAcc(t, c.event, scsOff, c.body)
			if !strings.Contains(strings.Join(probs, "\n"), "a_stamp") {
				t.Errorf("schema.Check problems %q: want the trigger a_stamp reported", probs)
			}
			if err == nil || n != 0 {
				t.Fatalf("a stale (token 40) INSERT of key 20, deleted under 70: err %v, rows %d; want refused and no row", err, n)
			}
		})
	}
}

// TestSCSOffUpdateTriggerReturnOldReported: the same spelling around a RETURN OLD of
// a BEFORE UPDATE trigger (plpgsqlKeepsNew): reported.
func TestSCSOffUpdateTriggerReturnOldReported(t *testing.T) {
	raw, _ := wholeAcc(t,
		`CREATE FUNCTION keep_old() RETURNS trigger LANGUAGE plpgsql SET standard_conforming_strings = off AS $$DECLARE x text; BEGIN x := '\''; RETURN OLD; x := '\''; RETURN NEW; END$$`,
		"CREATE TRIGGER a_keep BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION keep_old()")
	probs, _ := accReport(t, raw)
	if !strings.Contains(strings.Join(probs, "\n"), "a_keep") {
		t.Fatalf("schema.Check problems %q: want the BEFORE UPDATE trigger a_keep (it returns OLD) reported", probs)
	}
}

// TestSCSOffGuardWriterTriggerReported: the same spelling in the SECURITY DEFINER
// function of a trigger on an unguarded table (audit) around a DELETE of accounts'
// tombstone table: a guard-writer door, and the stale INSERT of the deleted key
// refused.
func TestSCSOffGuardWriterTriggerReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	testdb.Exec(t, raw,
		`CREATE FUNCTION scs_erase() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET standard_conforming_strings = off AS $$DECLARE x text; BEGIN x := '\''; DELETE FROM public.fencedsql_tomb_accounts; x := '\''; RETURN NULL; END$$`,
		"CREATE TRIGGER scs_erase AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION scs_erase()")
	tombAttack(t, ctx, dsn, false, 90, "INSERT INTO audit (msg) VALUES ('x')")
	requireDoorNoFix(t, ctx, dsn, dialect.SideDoorGuardWriter, "scs_erase on public.audit")
}

// TestSCSOffDefinerFunctionReported: the same spelling in a SECURITY DEFINER function
// (no trigger) that a pool may call: a guard-writer door, and the stale INSERT
// refused.
func TestSCSOffDefinerFunctionReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw,
		`CREATE FUNCTION scs_purge() RETURNS int LANGUAGE plpgsql SECURITY DEFINER SET standard_conforming_strings = off AS $$DECLARE x text; BEGIN x := '\''; DELETE FROM public.fencedsql_tomb_accounts; x := '\''; RETURN 1; END$$`)
	tombAttack(t, ctx, dsn, false, 0, "SELECT scs_purge()")
	requireDoorNoFix(t, ctx, dsn, dialect.SideDoorGuardWriter, "function public.scs_purge()")
}

// TestSCSOffSessionSettingGuardWriterReported: the same hiding without any
// function-level setting: the trigger function is created with check_function_bodies
// = off and fires in another application's session that runs with
// standard_conforming_strings = off (a role or database default, or SET), where the
// body compiles and its DELETE erases the tombstones. The readers read every body with
// a backslash both ways, whatever its proconfig: a guard-writer door.
func TestSCSOffSessionSettingGuardWriterReported(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"SET check_function_bodies = off",
		`CREATE FUNCTION scs_erase() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$DECLARE x text; BEGIN x := '\''; DELETE FROM public.fencedsql_tomb_accounts; x := '\''; RETURN NULL; END$$`,
		"CREATE TRIGGER scs_erase AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION scs_erase()",
		"RESET check_function_bodies",
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Logf("fenced DELETE: %v", err)
	}
	// Another application's session, with standard_conforming_strings = off.
	for _, q := range []string{"SET standard_conforming_strings = off", "INSERT INTO audit (msg) VALUES ('x')", "RESET standard_conforming_strings"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, -1)")
	if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("stale INSERT (token 90) of key 1 deleted under 100: %v, want ErrFenced or ErrSchema", err)
	}
	requireDoorNoFix(t, ctx, dsn, dialect.SideDoorGuardWriter, "scs_erase on public.audit")
}

// TestSCSOffOtherDoorsReported: the other readers of a body see the hidden statement
// too — a routine that writes accounts (routines), a trigger on another table that
// writes it (otherTriggers), the table's own BEFORE trigger that writes it itself
// (patchDoor), and dynamic SQL whose table name is spelled by a plain literal's
// escapes (a name only the "off" reading decodes).
func TestSCSOffOtherDoorsReported(t *testing.T) {
	for name, c := range map[string]struct {
		kind           dialect.SideDoorKind
		object, create string
	}{
		"Routine": {dialect.SideDoorRoutine, "function public.scs_zap()",
			`CREATE FUNCTION scs_zap() RETURNS int LANGUAGE plpgsql SET standard_conforming_strings = off AS $$DECLARE x text; BEGIN x := '\''; UPDATE accounts SET balance = 0, version = version + 1; x := '\''; RETURN 1; END$$`},
		"OtherTrigger": {dialect.SideDoorTrigger, "scs_zap on public.audit",
			`CREATE FUNCTION scs_zap() RETURNS trigger LANGUAGE plpgsql SET standard_conforming_strings = off AS $$DECLARE x text; BEGIN x := '\''; UPDATE accounts SET balance = 0, version = version + 1; x := '\''; RETURN NULL; END$$;
CREATE TRIGGER scs_zap AFTER INSERT ON audit FOR EACH ROW EXECUTE FUNCTION scs_zap()`},
		"OwnTriggerWritesTable": {dialect.SideDoorOwnTrigger, "scs_zap on public.accounts",
			`CREATE FUNCTION scs_zap() RETURNS trigger LANGUAGE plpgsql SET standard_conforming_strings = off AS $$DECLARE x text; BEGIN x := '\''; UPDATE accounts SET balance = NEW.balance WHERE id = NEW.id; x := '\''; RETURN NEW; END$$;
CREATE TRIGGER scs_zap BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION scs_zap()`},
		"DynamicPlainEscape": {dialect.SideDoorRoutine, "function public.scs_zap()",
			`CREATE FUNCTION scs_zap() RETURNS int LANGUAGE plpgsql SET standard_conforming_strings = off AS $$BEGIN EXECUTE 'UPDATE ' || quote_ident('\x61ccounts') || ' SET balance = 0, version = version + 1'; RETURN 1; END$$`},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t, "CREATE TABLE audit (id BIGSERIAL PRIMARY KEY, msg TEXT)")
			testdb.Exec(t, raw, c.create)
			requireDoorNoFix(t, ctx, dsn, c.kind, c.object)
		})
	}
}

// TestSCSBackslashBodiesNotRefused: a body whose backslashes hide no statement under
// either setting (a regular expression in a validating BEFORE trigger of the guarded
// table, which means the same under both here, and an E'…' literal) is judged as
// before: no door.
func TestSCSBackslashBodiesNotRefused(t *testing.T) {
	probs, err, n := stampAcc(t, "INSERT OR UPDATE", scsOff,
		`BEGIN IF NEW.balance::text !~ '^-?[0-9]+\.?$' THEN RAISE EXCEPTION 'bad balance: %', E'\t'; END IF; RETURN NEW; END`)
	if len(probs) != 0 {
		t.Errorf("schema.Check problems %q: want none (the body reads the same under both settings)", probs)
	}
	if !errors.Is(err, fencedsql.ErrFenced) || n != 0 {
		t.Errorf("a stale (token 40) INSERT of key 20, deleted under 70: err %v, rows %d; want ErrFenced and no row", err, n)
	}
}
