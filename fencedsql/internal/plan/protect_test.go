package plan

import (
	"strings"
	"testing"
)

// The guards guard themselves (docs/design.md G15; internal/plan/protect.go): statement heads ×
// guard-object names × spellings × dialects × options, all refused; reads pass; the
// reserved prefix, the lock backend's exemption, the DDL that removes guards without
// naming them, and the protected settings by every spelling.

var protectDialects = []testDialect{pgTest, mysqlTest, sqliteTest}

// protectOptions: the refusals hold whatever the options allow.
var protectOptions = map[string][]testOption{
	"default":         {Guard("accounts")},
	"ddl+dynamic_sql": {Guard("accounts"), WithDDL(true), WithDynamicSQL(true)},
}

// guardObjectNames are names of the dialects' guard objects, present and future.
var guardObjectNames = []string{
	"fencedsql_tombstones", "fencedsql_tomb_accounts", "fencedsql_guard_accounts",
	"fencedsql_tombstone_accounts", "fencedsql_guard", "fencedsql_guard_truncate",
	"fencedsql_tombstone_delete", "fencedsql_tombdel_accounts", "fencedsql_tombins_accounts",
	"fencedsql_refuse_write", "Fencedsql_Floor", "FENCEDSQL_REGISTRY",
}

// spellings of a name in one dialect: quoted, case, qualified, with comments.
func guardSpellings(d testDialect, name string) []string {
	q := func(s string) string { return string(d.quote) + s + string(d.quote) }
	out := []string{
		name, strings.ToUpper(name), strings.ToLower(name),
		q(name), "public." + name, q("public") + "." + q(name), "public/**/./**/" + name,
	}
	if d.name == "postgres" {
		out = append(out, `pg_temp.`+name, `"`+strings.ToLower(name)+`"`)
	}
	if d.name == "sqlite" {
		out = append(out, "["+name+"]", "`"+name+"`", "main."+name, "temp."+name)
	}
	return out
}

// guardObjectStatements change, shadow or lock a guard object (%s).
var guardObjectStatements = []string{
	"DELETE FROM %s WHERE deleted_at < now()",
	"DELETE FROM %s",
	"UPDATE %s SET fence_token = 0",
	"UPDATE %s AS t SET fence_token = 0 WHERE t.pk = '[1]'",
	"INSERT INTO %s (table_name, pk, fence_token) VALUES ('accounts', '[1]', 0)",
	"INSERT INTO other (a) SELECT fence_token FROM %s",
	"REPLACE INTO %s (table_name, pk, fence_token) VALUES ('accounts', '[1]', 0)",
	"INSERT OR REPLACE INTO %s (table_name, pk, fence_token) VALUES ('accounts', '[1]', 0)",
	"MERGE INTO %s t USING other o ON t.pk = o.pk WHEN MATCHED THEN DELETE",
	"TRUNCATE %s", "TRUNCATE TABLE %s", "TRUNCATE ONLY %s CASCADE",
	"COPY %s FROM STDIN", "LOAD DATA INFILE '/tmp/x' INTO TABLE %s",
	"DROP TABLE %s", "DROP TABLE IF EXISTS accounts_old, %s CASCADE", "DROP VIEW %s",
	"DROP FUNCTION %s() CASCADE", "DROP FUNCTION IF EXISTS %s", "DROP PROCEDURE %s",
	"DROP TRIGGER %s ON accounts", "DROP TRIGGER IF EXISTS %s",
	"ALTER TABLE %s RENAME TO old", "ALTER TABLE %s DROP COLUMN fence_token",
	"ALTER TABLE %s ADD COLUMN x int", "ALTER TABLE accounts DISABLE TRIGGER %s",
	"ALTER TABLE accounts ENABLE REPLICA TRIGGER %s",
	"ALTER FUNCTION %s() OWNER TO mallory", "ALTER FUNCTION %s() RENAME TO g",
	"ALTER FUNCTION %s() SECURITY INVOKER", "ALTER TRIGGER %s ON accounts RENAME TO t",
	"ALTER EXTENSION e DROP FUNCTION %s()",
	"CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'",
	"CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'",
	"CREATE TRIGGER %s BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION f()",
	"CREATE TRIGGER t BEFORE INSERT ON %s FOR EACH ROW BEGIN SELECT 1; END",
	"CREATE RULE r AS ON INSERT TO %s DO INSTEAD NOTHING",
	"CREATE POLICY p ON %s USING (false)",
	"CREATE TEMP TABLE %s (table_name text, pk text, fence_token bigint)",
	"CREATE TEMPORARY TABLE %s (table_name text, pk text, fence_token bigint)",
	"CREATE TEMPORARY TABLE IF NOT EXISTS %s LIKE other",
	"CREATE TEMP VIEW %s AS SELECT 1", "CREATE TABLE %s AS SELECT 1",
	"CREATE UNLOGGED TABLE %s (a int)", "CREATE INDEX i ON %s (pk)",
	"SELECT 1 INTO TEMP %s", "SELECT * INTO %s FROM other",
	"COMMENT ON TABLE %s IS 'x'", "COMMENT ON FUNCTION %s() IS 'x'",
	"GRANT DELETE ON %s TO PUBLIC", "REVOKE ALL ON %s FROM app", "GRANT EXECUTE ON FUNCTION %s() TO app",
	"RENAME TABLE %s TO old", "LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", "LOCK TABLES %s WRITE",
	"SELECT * FROM %s FOR UPDATE", "SELECT * FROM %s FOR SHARE", "SELECT * FROM %s FOR NO KEY UPDATE",
	"SELECT * FROM %s LOCK IN SHARE MODE", "SELECT %s()", "SELECT public.%s('x')",
	"WITH d AS (DELETE FROM %s RETURNING pk) SELECT count(*) FROM d",
	"EXPLAIN ANALYZE DELETE FROM %s", "EXPLAIN DELETE FROM %s",
	"VACUUM FULL %s", "REINDEX TABLE %s", "CLUSTER %s", "ANALYZE %s", "OPTIMIZE TABLE %s",
	"REPAIR TABLE %s", "HANDLER %s OPEN", "SECURITY LABEL ON TABLE %s IS 'x'",
	"ATTACH DATABASE 'x.db' AS %s", "DETACH %s", "REFRESH MATERIALIZED VIEW %s",
	"PREPARE p AS DELETE FROM %s", "EXECUTE %s", "CALL %s()",
	"SELECT 1; DELETE FROM %s",
}

// guardObjectBodies name a guard object inside a string or body (%s: the bare name).
var guardObjectBodies = map[string][]string{
	"postgres": {
		"CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ DELETE FROM %s $$",
		"CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $body$ UPDATE public.%s SET fence_token = 0 $body$",
		`CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'DROP TRIGGER "%s" ON accounts'`,
		"DO $$ BEGIN EXECUTE 'TRUNCATE %s'; END $$",
		"DO $$ BEGIN DELETE FROM %s; END $$",
		"CREATE RULE r AS ON INSERT TO other DO ALSO SELECT 'x'; COMMENT ON TABLE other IS '%s'",
		"SELECT 1; CALL run('DELETE FROM %s')",
		"SELECT query_to_xml('delete from %s returning 1', true, true, '')",
		"SELECT 'DELETE FROM %s' AS text_only",
	},
	"mysql": {
		"PREPARE s FROM 'DELETE FROM %s'",
		"PREPARE s FROM \"DROP TRIGGER `%s`\"",
		"SET @q = 'DELETE FROM %s'",
		"CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO CALL run('TRUNCATE %s')",
	},
	"sqlite": {
		"CREATE TRIGGER t AFTER INSERT ON other BEGIN DELETE FROM '%s'; END",
		"UPDATE other SET note = '%s'",
	},
}

func TestGuardObjectsRefused(t *testing.T) {
	n := 0
	for _, d := range protectDialects {
		for optName, opts := range protectOptions {
			rw := newTestRewriter(t, d, opts...)
			refused := func(sql string) {
				t.Helper()
				n++
				if p, err := rw.Rewrite(sql, false); !isRefusal(err) {
					t.Errorf("%s %s: rewrite(%q) = %v, %v; want ErrUnsupported", d.name, optName, sql, p, err)
				}
			}
			for _, name := range guardObjectNames {
				for _, sp := range guardSpellings(d, name) {
					for _, st := range guardObjectStatements {
						sql := strings.ReplaceAll(st, "%s", sp)
						refused(sql)
						refused("/* c */ " + strings.ToLower(sql[:1]) + sql[1:] + " -- c")
						if d.name == "mysql" {
							refused("/*!50000 " + sql + " */")
							refused("/*M!100100 " + sql + " */")
						}
					}
				}
				for _, st := range guardObjectBodies[d.name] {
					refused(strings.ReplaceAll(st, "%s", name))
				}
			}
		}
	}
	t.Logf("%d refusals checked", n)
}

func TestGuardObjectEscapes(t *testing.T) {
	for _, c := range []struct {
		d   testDialect
		sql string
	}{
		{pgTest, `DROP FUNCTION U&"\0066encedsql_guard_accounts"() CASCADE`},
		{pgTest, `DROP FUNCTION U&"!0066encedsql_guard_accounts" UESCAPE '!' () CASCADE`},
		{pgTest, `DELETE FROM U&"\0066encedsql_tombstones"`},
		{pgTest, `CREATE FUNCTION f() RETURNS void LANGUAGE sql AS E'DELETE FROM \x66encedsql_tombstones'`},
		{pgTest, `CREATE FUNCTION f() RETURNS void LANGUAGE sql AS E'DELETE FROM \146encedsql_tombstones'`},
		{pgTest, `CREATE FUNCTION f() RETURNS void LANGUAGE sql AS U&'DELETE FROM \0066encedsql_tombstones'`},
		{pgTest, `DO $$ BEGIN EXECUTE E'TRUNCATE \u0066encedsql_tombstones'; END $$`},
		{mysqlTest, `PREPARE s FROM 'DELETE FROM \fencedsql_tombstones'`},
	} {
		for _, opts := range protectOptions {
			rw := newTestRewriter(t, c.d, opts...)
			if p, err := rw.Rewrite(c.sql, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, c.sql, p, err)
			}
		}
	}
}

// Plain reads of guard objects pass, and so does the reserved prefix where it is not
// an identifier of a statement that changes something; the lock backend's objects are
// not guard objects.
func TestGuardObjectsPass(t *testing.T) {
	reads := []string{
		"SELECT * FROM %s", "select pk, fence_token from %s where table_name = 'accounts'",
		"SELECT count(*) FROM %s t JOIN accounts a ON t.pk = CAST(a.id AS text)",
		"WITH t AS (SELECT * FROM %s) SELECT * FROM t", "(SELECT 1 FROM %s)",
		"EXPLAIN SELECT * FROM %s", "TABLE %s", "SELECT EXISTS (SELECT 1 FROM %s WHERE fence_token > 1)",
		"SELECT replace(pk, '[', '') FROM %s",
	}
	perDialect := map[string][]string{
		"postgres": {"SELECT tgname FROM pg_trigger WHERE tgname IN ('%s', 'fencedsql_guard')", "SELECT to_regclass('%s')",
			"SELECT tgname FROM pg_trigger WHERE tgname LIKE '%s%%'", "SELECT 'see public.%s' AS text_only"},
		"mysql":  {"SHOW CREATE TABLE %s", "DESCRIBE %s", "SHOW TRIGGERS LIKE '%s'"},
		"sqlite": {"PRAGMA table_info(%s)", "PRAGMA main.index_list('%s')", "SELECT sql FROM sqlite_schema WHERE name = '%s'"},
	}
	others := []string{
		// the reserved prefix only counts at an identifier boundary, and never in comments
		"UPDATE other SET xfencedsql_note = 1", "UPDATE other SET note = 'myfencedsql_x'",
		"UPDATE other SET x = 1 -- DELETE FROM fencedsql_tombstones",
		"DELETE FROM other /* fencedsql_guard */ WHERE id = 1",
		"SELECT fencedsql_note FROM other",
		// the SQL lock backend keeps its table in the fenced database
		"INSERT INTO fencedsql_locks (lock_key, token) VALUES ('k', 1)",
		"UPDATE fencedsql_locks_waiters SET gone = true WHERE lock_key = 'k'",
		"DELETE FROM public.fencedsql_locks WHERE lock_key = 'k'",
		"CREATE TABLE IF NOT EXISTS fencedsql_locks (lock_key text PRIMARY KEY)",
		"LISTEN fencedsql_sqllock_00ff", "NOTIFY fencedsql_sqllock_00ff",
		// DDL that cannot reach the guards
		"DROP TABLE other CASCADE", "DROP TYPE mood", "DROP FUNCTION f()", "DROP SCHEMA IF EXISTS s RESTRICT",
		"ALTER TABLE other ENABLE ROW LEVEL SECURITY", "ALTER TABLE other ADD COLUMN note text",
	}
	for _, d := range protectDialects {
		rw := newTestRewriter(t, d, Guard("accounts"))
		pass := func(sql string) {
			t.Helper()
			if d.name == "mysql" && strings.Contains(sql, "DROP SCHEMA") {
				return // MySQL's DROP SCHEMA is DROP DATABASE: refused
			}
			if p, err := rw.Rewrite(sql, false); err != nil || p.Kind != KindPass {
				t.Errorf("%s: rewrite(%q) = %v, %v; want pass-through", d.name, sql, p, err)
			}
		}
		for _, name := range guardObjectNames {
			for _, sp := range guardSpellings(d, name) {
				for _, r := range reads {
					pass(strings.ReplaceAll(r, "%s", sp))
				}
			}
			for _, r := range perDialect[d.name] {
				pass(strings.ReplaceAll(r, "%s", name))
			}
		}
		for _, o := range others {
			pass(o)
		}
	}
	// The reserved prefix: a column of an ordinary table named like a guard object is
	// refused in a statement that changes something (documented in doc.go).
	for _, d := range protectDialects {
		rw := newTestRewriter(t, d, Guard("accounts"))
		for _, sql := range []string{"UPDATE other SET fencedsql_note = 1", "UPDATE other SET note = 'see fencedsql_tombstones'"} {
			if _, err := rw.Rewrite(sql, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v; want ErrUnsupported (reserved prefix)", d.name, sql, err)
			}
		}
	}
	// Without guarded tables the wrapper stays transparent.
	rw := newTestRewriter(t, pgTest, WithDDL(false))
	for _, sql := range []string{"DROP FUNCTION fencedsql_guard_accounts() CASCADE", "SET session_replication_role = replica"} {
		if p, err := rw.Rewrite(sql, false); err != nil || p.Kind != KindPass {
			t.Errorf("no guarded tables: rewrite(%q) = %v, %v; want pass-through", sql, p, err)
		}
	}
}

// DDL that removes or disables guards without naming them.
func TestGuardRemovingDDLRefused(t *testing.T) {
	cases := []struct {
		d   testDialect
		sql string
	}{
		{pgTest, "DROP SCHEMA public CASCADE"},
		{pgTest, "drop schema if exists app, public cascade"},
		{pgTest, "DROP OWNED BY app"},
		{pgTest, "DROP OWNED BY app RESTRICT"},
		{pgTest, "REASSIGN OWNED BY app TO mallory"},
		{pgTest, "DROP EXTENSION plpgsql CASCADE"},
		{pgTest, "ALTER TABLE accounts DISABLE TRIGGER ALL"},
		{pgTest, "ALTER TABLE accounts DISABLE TRIGGER USER"},
		{pgTest, "ALTER TABLE other DISABLE TRIGGER ALL"},
		{pgTest, "ALTER TABLE IF EXISTS ONLY accounts ENABLE REPLICA TRIGGER ALL"},
		{pgTest, "ALTER TABLE accounts ENABLE ALWAYS TRIGGER t"},
		{pgTest, "SELECT 1; ALTER TABLE accounts DISABLE TRIGGER ALL"},
		{mysqlTest, "DROP DATABASE shop"},
		{mysqlTest, "DROP SCHEMA IF EXISTS shop"},
		{mysqlTest, "/*!40000 DROP DATABASE shop */"},
	}
	for _, c := range cases {
		for _, opts := range protectOptions {
			rw := newTestRewriter(t, c.d, opts...)
			if p, err := rw.Rewrite(c.sql, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, c.sql, p, err)
			}
		}
	}
}

// settingSpellings: %n the setting's name, %v a value; the dialects each applies to.
var settingSpellings = []struct {
	dialects string
	sql      string
}{
	{"pms", "SET %n = %v"}, {"pms", "set %N = %v"}, {"pms", "SET SESSION %n = %v"},
	{"pm", "SET LOCAL %n = %v"}, {"p", "SET %n TO %v"}, {"p", "SET LOCAL %n TO %v"},
	{"p", `SET "%n" = %v`}, {"p", `SET "%N" TO %v`}, {"p", "SET SESSION /* c */ %n = %v"},
	{"p", "ALTER DATABASE shop SET %n = %v"}, {"p", "ALTER ROLE app SET %n TO %v"},
	{"p", "ALTER ROLE app IN DATABASE shop SET %n = %v"}, {"p", "ALTER USER app SET %n = %v"},
	{"p", "ALTER SYSTEM SET %n = %v"}, {"p", "ALTER FUNCTION f() SET %n = %v"},
	{"p", "CREATE FUNCTION f() RETURNS void LANGUAGE sql SET %n = %v AS 'SELECT 1'"},
	{"p", "SELECT set_config('%n', '%v', false)"}, {"p", "SELECT pg_catalog.set_config('%N', '%v', true)"},
	{"p", `SELECT "set_config"('%n', '%v', false)`}, {"p", "SELECT 1 WHERE set_config('%n', '%v', false) IS NOT NULL"},
	{"p", "DO $$ BEGIN SET LOCAL %n = %v; END $$"}, {"p", "DO $$ BEGIN PERFORM set_config('%n', '%v', false); END $$"},
	{"p", "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS $$ SELECT set_config('%n', '%v', false) $$"},
	{"p", "UPDATE pg_settings SET setting = '%v' WHERE name = '%n'"},
	{"p", `UPDATE pg_catalog."pg_settings" SET setting = '%v' WHERE name = '%n'`},
	{"p", "SELECT query_to_xml('select set_config(''%n'', ''%v'', false)', true, true, '')"},
	{"p", "SELECT 1; SET %n = %v"},
	{"m", "SET @@%n = %v"}, {"m", "SET @@session.%n = %v"}, {"m", "SET @@SESSION.`%n` := %v"},
	{"m", "SET `%n` = %v"}, {"m", "SET GLOBAL %n = %v"}, {"m", "SET @a = 1, %n = %v"},
	{"m", "/*!40101 SET %n = %v */"}, {"m", "/*!40101 SET @@session.%n=%v*/"}, {"m", "SET /*!80000 %n = */ %v"},
	{"m", "SET STATEMENT %n = %v FOR UPDATE other SET x = 1"},
	{"m", "CREATE PROCEDURE p() BEGIN SET %n = %v; UPDATE other SET x = 1; END"},
	{"m", "PREPARE s FROM 'SET %n = %v'"},
}

func TestProtectedSettingsRefused(t *testing.T) {
	bad := map[string][]string{
		"session_replication_role": {"replica", "'replica'", "REPLICA", "DEFAULT", "$1", "?"},
		"synchronous_commit":       {"off", "local", "'off'", "0", "false", "LOCAL", "DEFAULT"},
		"sql_log_bin":              {"0", "OFF", "false", "'OFF'", "DEFAULT", "?", "@x"},
		"skip_replication":         {"1", "ON", "true"},
	}
	n := 0
	for _, d := range protectDialects {
		for optName, opts := range protectOptions {
			rw := newTestRewriter(t, d, opts...)
			for name, vals := range bad {
				for _, v := range vals {
					for _, sp := range settingSpellings {
						if !strings.Contains(sp.dialects, d.name[:1]) {
							continue
						}
						if strings.Contains(sp.sql, "'%v'") {
							v = strings.Trim(v, "'")
						}
						sql := strings.NewReplacer("%n", name, "%N", strings.ToUpper(name), "%v", v).Replace(sp.sql)
						n++
						if p, err := rw.Rewrite(sql, false); !isRefusal(err) {
							t.Errorf("%s %s: rewrite(%q) = %v, %v; want ErrUnsupported", d.name, optName, sql, p, err)
						}
					}
				}
			}
		}
	}
	more := []struct {
		d   testDialect
		sql string
	}{
		{pgTest, "RESET session_replication_role"}, {pgTest, `RESET "synchronous_commit"`},
		{pgTest, "ALTER ROLE app RESET synchronous_commit"}, {pgTest, "SET session_replication_role FROM CURRENT"},
		{pgTest, "ALTER FUNCTION f() SET synchronous_commit FROM CURRENT"},
		{pgTest, "SELECT set_config($1, 'replica', false)"}, {pgTest, "SELECT set_config(name, 'off', false) FROM t"},
		{pgTest, "SELECT set_config('session_' || 'replication_role', 'replica', false)"},
		{pgTest, "SELECT set_config('session_replication_role', $1, false)"},
		{pgTest, "SELECT set_config('session_replication_role', 'rep' || 'lica', false)"},
		{pgTest, `SELECT set_config(E'session\x5freplication_role', 'replica', false)`},
		{pgTest, `SELECT set_config(U&'session\005freplication_role', 'replica', false)`},
		{pgTest, `SELECT U&"\0073et_config"('session_replication_role', 'replica', false)`},
		{pgTest, `SET U&"session\005freplication_role" = replica`},
		{pgTest, `ALTER ROLE app SET U&"\0073ynchronous_commit" = off`},
		{pgTest, "SET synchronous_commit = 'on' || ''"},
		{pgTest, "UPDATE pg_settings SET setting = $1 WHERE name = $2"},
		{pgTest, "WITH s AS (UPDATE pg_settings SET setting = 'x' WHERE name = $1 RETURNING 1) SELECT 1"},
		{pgTest, "DELETE FROM pg_settings"}, {pgTest, "SELECT * FROM pg_settings FOR UPDATE"},
		{pgTest, "DO $$ BEGIN UPDATE pg_settings SET setting = 'replica' WHERE name = 'session_' || 'replication_role'; END $$"},
		{sqliteTest, "PRAGMA writable_schema = 1"}, {sqliteTest, "PRAGMA main.writable_schema=ON"},
		{sqliteTest, "pragma WRITABLE_SCHEMA"}, {sqliteTest, `PRAGMA "writable_schema" = RESET`},
		{sqliteTest, "PRAGMA writable_schema(1)"}, {sqliteTest, "PRAGMA temp.writable_schema = true"},
		{sqliteTest, "SELECT * FROM pragma_writable_schema"}, {sqliteTest, "SELECT * FROM PRAGMA_WRITABLE_SCHEMA()"},
		{sqliteTest, "SELECT 1; PRAGMA writable_schema = 1"},
		// SQLite takes a string where a name is expected.
		{sqliteTest, "PRAGMA 'writable_schema' = 1"}, {sqliteTest, "PRAGMA main.'writable_schema' = 1"},
		{sqliteTest, "PRAGMA 'WRITABLE_SCHEMA'"}, {sqliteTest, "PRAGMA 'journal_mode' = OFF"},
		{sqliteTest, "PRAGMA main.'journal_mode' = 'off'"}, {sqliteTest, "PRAGMA 'synchronous' = 0"},
		{sqliteTest, "PRAGMA 'synchronous'(OFF)"}, {sqliteTest, "PRAGMA 'pragma_writable_schema'"},
		{mysqlTest, "SET sql_log_bin = 1 - 1"}, {mysqlTest, "SET sql_log_bin = (0)"},
		{mysqlTest, "SET timestamp = 1000000"}, {mysqlTest, "SET @@session.timestamp = 1"},
		{mysqlTest, "SET SESSION timestamp = UNIX_TIMESTAMP('2000-01-01')"}, {mysqlTest, "SET timestamp = DEFAULT"},
		{mysqlTest, "SET STATEMENT timestamp = 5 FOR DELETE FROM accounts WHERE id = 1"},
	}
	for _, c := range more {
		for _, opts := range protectOptions {
			n++
			rw := newTestRewriter(t, c.d, opts...)
			if p, err := rw.Rewrite(c.sql, false); !isRefusal(err) {
				t.Errorf("%s: rewrite(%q) = %v, %v; want ErrUnsupported", c.d.name, c.sql, p, err)
			}
		}
	}
	t.Logf("%d refusals checked", n)
}

func TestProtectedSettingsPass(t *testing.T) {
	cases := []struct {
		d   testDialect
		sql string
	}{
		{pgTest, "SET synchronous_commit = on"}, {pgTest, "SET LOCAL synchronous_commit TO remote_apply"},
		{pgTest, "SET synchronous_commit = 'remote_write'"}, {pgTest, `SET "synchronous_commit" = ON`},
		{pgTest, "SET session_replication_role = origin"}, {pgTest, "SELECT set_config('synchronous_commit', 'on', true)"},
		{pgTest, "SELECT set_config('application_name', $1, false)"}, {pgTest, "SELECT set_config('app.tenant', 'x', true)"},
		{pgTest, "SELECT current_setting('session_replication_role')"}, {pgTest, "SHOW synchronous_commit"},
		{pgTest, "SHOW session_replication_role"}, {pgTest, "SELECT setting FROM pg_settings WHERE name = 'session_replication_role'"},
		{pgTest, "SELECT * FROM pg_catalog.pg_settings"}, {pgTest, "SET search_path = public"}, {pgTest, "RESET ALL"},
		{pgTest, "SET application_name = 'session_replication_role'"},
		{pgTest, "DO $$BEGIN PERFORM set_config('standard_conforming_strings', 'off', false); END$$"},
		{pgTest, "SELECT query_to_xml('select set_config(''application_name'', ''x'', false)', true, true, '')"},
		{pgTest, "COMMENT ON TABLE other IS 'never set session_replication_role here'"},
		{mysqlTest, "SET sql_log_bin = 1"}, {mysqlTest, "SET SESSION sql_log_bin = ON"}, {mysqlTest, "SELECT @@sql_log_bin"},
		{mysqlTest, "SET @@session.sql_log_bin = true"}, {mysqlTest, "SHOW VARIABLES LIKE 'sql_log_bin'"},
		{mysqlTest, "SET skip_replication = 0"}, {mysqlTest, "SET @x = 1"},
		{mysqlTest, "SELECT @@timestamp, CAST(NOW() AS DATETIME)"}, {mysqlTest, "SET @t = UNIX_TIMESTAMP()"},
		{mysqlTest, "UPDATE other SET timestamp = NOW()"}, {pgTest, "SELECT now()::timestamp, CURRENT_TIMESTAMP"},
		{pgTest, "ALTER TABLE other ALTER COLUMN c TYPE timestamp"},
		{sqliteTest, "PRAGMA foreign_keys = ON"}, {sqliteTest, "PRAGMA table_info(accounts)"},
		{sqliteTest, "PRAGMA 'journal_mode' = WAL"}, {sqliteTest, "PRAGMA main.'synchronous' = FULL"},
		{sqliteTest, "PRAGMA 'table_info'('accounts')"},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, Guard("accounts"), WithDynamicSQL(true))
		if p, err := rw.Rewrite(c.sql, false); err != nil || p.Kind != KindPass {
			t.Errorf("%s: rewrite(%q) = %v, %v; want pass-through", c.d.name, c.sql, p, err)
		}
	}
}
