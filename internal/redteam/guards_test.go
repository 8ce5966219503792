package redteam

// Classes 8 and 9 (issue 19 items 4 and 5, issue 21): the guards guard themselves and
// the session cannot switch them off. The harness installs no guards, so each entry's
// setup installs guard objects of its own, named as the dialects name theirs (the
// reserved prefix fencedsql_): a tombstone table with one tombstone, a guard trigger
// that refuses an UPDATE lowering the token and, where shadowing is shown, a
// tombstone check that reads the tombstone table by its unqualified name. On the raw
// driver each entry changes the guard objects or gets past them (a row, the catalog,
// or a follow-up that the intact guard would refuse); through the wrapper it is refused.

const (
	c8 = "8_guard_objects"  // writes, drops, replaces, disables or shadows a guard object
	c9 = "9_guard_settings" // a session setting that switches the guards off
)

// pgGuardSetup: a tombstone table, a guard function and trigger on accounts, and a
// tombstone check for INSERT that reads fencedsql_tombstones unqualified.
var pgGuardSetup = []string{
	"CREATE TABLE fencedsql_tombstones (table_name text NOT NULL, pk text NOT NULL, fence_token bigint NOT NULL, PRIMARY KEY (table_name, pk))",
	"INSERT INTO fencedsql_tombstones VALUES ('accounts', '[9]', 50)",
	"CREATE FUNCTION fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.fence_token < OLD.fence_token THEN RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = 'fence_token'; END IF; RETURN NEW; END $$",
	"CREATE TRIGGER fencedsql_guard BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION fencedsql_guard_accounts()",
	"CREATE FUNCTION fencedsql_tombstone_accounts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF EXISTS (SELECT 1 FROM fencedsql_tombstones t WHERE t.table_name = 'accounts' AND t.pk = '[' || NEW.id || ']' AND t.fence_token > NEW.fence_token) THEN RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = 'fence_token'; END IF; RETURN NEW; END $$",
	"CREATE TRIGGER fencedsql_tombstone_insert BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION fencedsql_tombstone_accounts()",
}

// lowerToken is what the intact guard refuses: an UPDATE that lowers the token.
const lowerToken = "UPDATE accounts SET fence_token = 0, balance = 0 WHERE id = 1"

// resurrect is what the intact tombstone check refuses: row 9 back under token 10.
const resurrect = "INSERT INTO accounts (id, balance, fence_token) VALUES (9, 9, 10)"

func postgresGuardEntries() []entry {
	g := func(class, name string, steps ...step) entry {
		return entry{class: class, name: name, setup: pgGuardSetup, steps: steps, want: Refused}
	}
	return []entry{
		g(c8, "delete_tombstones", x("DELETE FROM fencedsql_tombstones")),
		g(c8, "update_tombstone_token", x("UPDATE fencedsql_tombstones SET fence_token = 0")),
		g(c8, "update_tombstone_quoted_qualified", x(`UPDATE "public"."fencedsql_tombstones" SET fence_token = 0`)),
		g(c8, "update_tombstone_upper_case", x("UPDATE PUBLIC.FENCEDSQL_TOMBSTONES SET FENCE_TOKEN = 0")),
		g(c8, "truncate_tombstones", x("TRUNCATE fencedsql_tombstones")),
		g(c8, "drop_guard_function_cascade", x("DROP FUNCTION fencedsql_guard_accounts() CASCADE")),
		{class: c8, name: "replace_guard_function", setup: pgGuardSetup, want: Refused,
			steps: []step{x("CREATE OR REPLACE FUNCTION fencedsql_guard_accounts() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$")},
			then:  []string{lowerToken}},
		g(c8, "drop_guard_trigger_quoted", x(`DROP TRIGGER "fencedsql_guard" ON public.accounts`)),
		g(c8, "rename_guard_trigger", x("ALTER TRIGGER fencedsql_guard ON accounts RENAME TO harmless")),
		g(c8, "rename_guard_function", x("ALTER FUNCTION fencedsql_guard_accounts() RENAME TO harmless")),
		g(c8, "disable_trigger_all", x("ALTER TABLE accounts DISABLE TRIGGER ALL")),
		g(c8, "enable_replica_trigger", x("ALTER TABLE accounts ENABLE REPLICA TRIGGER fencedsql_guard")),
		g(c8, "do_block_deletes_tombstones", x("DO $$ BEGIN DELETE FROM fencedsql_tombstones; END $$")),
		// a temporary table shadows the tombstone table for the session: the stale INSERT
		// that the tombstone refuses passes on the raw driver
		g(c8, "temp_table_shadows_tombstones",
			x("CREATE TEMP TABLE fencedsql_tombstones (table_name text, pk text, fence_token bigint)"), x(resurrect)),
		// replica mode: the guard's trigger does not fire, the token goes down
		g(c9, "set_config_replica", s("SELECT set_config('session_replication_role', 'replica', false)"), x(lowerToken)),
		g(c9, "set_quoted_replica", x(`SET "session_replication_role" = replica`), x(lowerToken)),
		g(c9, "set_session_replica_quoted_value", x("SET SESSION session_replication_role TO 'replica'"), x(lowerToken)),
		g(c9, "update_pg_settings", x("UPDATE pg_settings SET setting = 'replica' WHERE name = 'session_replication_role'"), x(lowerToken)),
	}
}

// mysqlGuardSetup: a tombstone table and a guard trigger that keeps the token from
// going down.
var mysqlGuardSetup = []string{
	"CREATE TABLE fencedsql_tombstones (table_name VARCHAR(64) NOT NULL, pk VARCHAR(255) NOT NULL, fence_token BIGINT NOT NULL, PRIMARY KEY (table_name, pk)) ENGINE=InnoDB",
	"INSERT INTO fencedsql_tombstones VALUES ('accounts', '[9]', 50)",
	"CREATE TRIGGER fencedsql_guard_accounts BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.fence_token = GREATEST(NEW.fence_token, OLD.fence_token)",
}

func mysqlGuardEntries() []entry {
	g := func(name string, steps ...step) entry {
		return entry{class: c8, name: name, setup: mysqlGuardSetup, steps: steps, want: Refused}
	}
	return []entry{
		g("delete_tombstones", x("DELETE FROM fencedsql_tombstones")),
		g("update_tombstone_token", x("UPDATE `fencedsql_tombstones` SET fence_token = 0")),
		g("truncate_tombstones", x("TRUNCATE TABLE fencedsql_tombstones")),
		g("replace_tombstone", x("REPLACE INTO fencedsql_tombstones VALUES ('accounts', '[9]', 0)")),
		g("drop_guard_trigger", x("DROP TRIGGER fencedsql_guard_accounts")),
		g("drop_guard_trigger_backquoted", x("DROP TRIGGER IF EXISTS `fencedsql_guard_accounts`")),
		g("drop_guard_trigger_exec_comment", x("/*!50000 DROP TRIGGER fencedsql_guard_accounts */")),
		g("rename_tombstone_table", x("RENAME TABLE fencedsql_tombstones TO old_tombstones")),
	}
}

// sqliteGuardSetup: a tombstone table and a guard trigger that refuses a lower token.
var sqliteGuardSetup = []string{
	"CREATE TABLE fencedsql_tombstones (table_name TEXT NOT NULL, pk TEXT NOT NULL, fence_token INTEGER NOT NULL, PRIMARY KEY (table_name, pk))",
	"INSERT INTO fencedsql_tombstones VALUES ('accounts', '[9]', 50)",
	"CREATE TRIGGER fencedsql_guard_accounts BEFORE UPDATE ON accounts FOR EACH ROW WHEN NEW.fence_token < OLD.fence_token BEGIN SELECT RAISE(ABORT, 'fenced'); END",
}

func sqliteGuardEntries() []entry {
	g := func(class, name string, steps ...step) entry {
		return entry{class: class, name: name, setup: sqliteGuardSetup, steps: steps, want: Refused}
	}
	return []entry{
		g(c8, "delete_tombstones", x("DELETE FROM fencedsql_tombstones")),
		g(c8, "update_tombstone_token", x("UPDATE [fencedsql_tombstones] SET fence_token = 0")),
		g(c8, "replace_tombstone", x("INSERT OR REPLACE INTO fencedsql_tombstones VALUES ('accounts', '[9]', 0)")),
		g(c8, "drop_guard_trigger", x(`DROP TRIGGER "fencedsql_guard_accounts"`)),
		g(c8, "drop_guard_trigger_qualified", x("DROP TRIGGER main.FENCEDSQL_GUARD_ACCOUNTS")),
		g(c8, "drop_tombstone_table", x("DROP TABLE fencedsql_tombstones")),
		// sqlite_dbpage (compiled into modernc's SQLite) writes pages below every
		// trigger: the guard's WHEN clause rewritten in place, same length.
		g(c8, "dbpage_rewrites_guard", x("UPDATE main.sqlite_dbpage SET data = CAST(replace(CAST(data AS TEXT), 'NEW.fence_token < OLD.fence_token', 'NEW.fence_token < -1             ') AS BLOB) WHERE instr(CAST(data AS TEXT), 'NEW.fence_token < OLD.fence_token') > 0")),
		g(c9, "writable_schema_deletes_trigger",
			x("PRAGMA writable_schema = ON"), x("DELETE FROM sqlite_schema WHERE type = 'trigger' AND name = 'fencedsql_guard_accounts'")),
	}
}
