package postgres

import "testing"

// TestObjectWideDDL: the statements that change guard objects without naming them
// (red-team rt48a F1) count, in code and in dynamic SQL's strings, under either
// standard_conforming_strings reading; everyday statements that share a word do not.
func TestObjectWideDDL(t *testing.T) {
	for _, c := range []struct {
		src  string
		want bool
	}{
		{`BEGIN DROP OWNED BY CURRENT_USER; END`, true},
		{`BEGIN REASSIGN OWNED BY CURRENT_USER TO app; END`, true},
		{`BEGIN DROP SCHEMA public CASCADE; END`, true},
		{`BEGIN DROP SCHEMA s; END`, true},
		{`BEGIN ALTER SCHEMA public OWNER TO app; END`, true},
		{`BEGIN ALTER SCHEMA public RENAME TO old; END`, true},
		{`BEGIN DROP EXTENSION plpgsql CASCADE; END`, true},
		{`BEGIN ALTER EXTENSION x UPDATE; END`, true},
		{`BEGIN DROP LANGUAGE plpgsql CASCADE; END`, true},
		{`BEGIN ALTER PROCEDURAL LANGUAGE plpgsql OWNER TO app; END`, true},
		{`BEGIN DROP TYPE keytype CASCADE; END`, true},
		{`BEGIN ALTER TYPE keytype OWNER TO app; END`, true},
		{`BEGIN GRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC; END`, true},
		{`BEGIN GRANT owner TO app; END`, true},
		{`BEGIN ALTER ROLE app SUPERUSER; END`, true},
		{`BEGIN ALTER DATABASE shop SET search_path = evil; END`, true},
		{`BEGIN ALTER TYPE keyenum RENAME VALUE 'a' TO 'b'; END`, true},
		{`BEGIN EXECUTE 'DROP OWNED BY ' || quote_ident(r); END`, true},
		{`DECLARE q text := 'DROP SCHEMA s CASCADE'; BEGIN EXECUTE q; END`, true},
		{`BEGIN EXECUTE $q$REASSIGN OWNED BY a TO b$q$; END`, true},
		// Under standard_conforming_strings off the first literal is 'x\'; DROP OWNED…' — no
		// statement there; with it on, DROP OWNED BY a runs.
		{`BEGIN PERFORM 'x\'; DROP OWNED BY a; --'; END`, true},
		{`BEGIN DELETE FROM audit WHERE id = 1; END`, false},
		{`BEGIN GRANT SELECT ON audit TO app; END`, false},
		{`BEGIN SELECT count(*) INTO n FROM t GROUP BY x; PERFORM current_setting('role'); END`, false},
		{`BEGIN CREATE TEMP TABLE x (user_id int); DROP TABLE x; END`, false},
		{`BEGIN UPDATE t SET value = 1; ALTER TABLE t RENAME COLUMN a TO b; END`, false},
	} {
		if got := objectWideDDL(c.src); got != c.want {
			t.Errorf("objectWideDDL(%q) = %v, want %v", c.src, got, c.want)
		}
	}
}

// TestGuardWritesGuardFunctions: a body naming one of the guard's functions (red-team
// rt48a F1, F2) changes a guard object — in DDL, in an EXECUTE'd string, in a string
// EXECUTE'd later — and so does one writing the tombstone table through a variable.
func TestGuardWritesGuardFunctions(t *testing.T) {
	fns := guardFunctionNames("accounts")
	for _, src := range []string{
		`BEGIN DROP FUNCTION public.fencedsql_tombstone_accounts() CASCADE; END`,
		`BEGIN DROP FUNCTION fencedsql_guard_accounts CASCADE; END`,
		`BEGIN EXECUTE 'CREATE OR REPLACE FUNCTION fencedsql_fenced_accounts(cur bigint, tok bigint) RETURNS integer LANGUAGE sql AS $b$ SELECT 1 $b$'; END`,
		`BEGIN ALTER FUNCTION "fencedsql_fence_accounts"(bigint, bigint) RENAME TO x; END`,
		`BEGIN ALTER ROUTINE fencedsql_tombclaim_accounts SECURITY INVOKER; END`,
		`DECLARE q text := 'DROP FUNCTION fencedsql_floor_sync() CASCADE'; BEGIN EXECUTE q; END`,
		`BEGIN DROP FUNCTION fencedsql_refuse_write() CASCADE; END`,
		`DECLARE q text := 'DELETE FROM fencedsql_tomb_accounts'; BEGIN EXECUTE q; END`,
	} {
		if got := guardWrites(src, "fencedsql_tomb_accounts", fns); len(got) == 0 {
			t.Errorf("guardWrites(%q) = none, want a guard object", src)
		}
	}
	for _, src := range []string{
		`BEGIN DROP FUNCTION fencedsql_guard_accounts_archive(); END`,
		`BEGIN PERFORM 1 FROM fencedsql_tomb_accounts; END`,
	} {
		if got := guardWrites(src, "fencedsql_tomb_accounts", fns); len(got) != 0 {
			t.Errorf("guardWrites(%q) = %q, want none", src, got)
		}
	}
}
