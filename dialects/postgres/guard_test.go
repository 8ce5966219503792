package postgres_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// Parallel with the conformance suites (TestConformance): the guard suite's tests, its
// own ConformanceWithGuard run included, each work in a database of their own and change
// only session settings (session_replication_role, search_path), so this long chain
// overlaps the suites' waits for the server instead of running before them.
func TestGuards(t *testing.T) {
	t.Parallel()
	fencetest.RunGuards(t, fencetest.Postgres(), postgres.Dialect, postgres.IsGuardError)
}

// BenchmarkGuard reports what the guard trigger costs a fenced UPDATE (guard-cost).
func BenchmarkGuard(b *testing.B) { fencetest.BenchGuard(b, fencetest.Postgres(), postgres.Dialect) }

func TestGuardDDLShape(t *testing.T) {
	g := postgres.Dialect.(dialect.Guarder)
	ddl := g.GuardDDL(dialect.TableName{Schema: "Shop", Name: "Accounts"}, `fence"token`, "version")
	if len(ddl) != 28 { // 14 for the floor table (the install lock first) and its copy (its owner checked), the ownership check, the three functions, their marks, 9 for the triggers
		t.Fatalf("GuardDDL = %d statements", len(ddl))
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`CREATE OR REPLACE FUNCTION "shop"."fencedsql_guard_accounts"() RETURNS trigger LANGUAGE plpgsql AS $fencedsql$`,
		`-- fencedsql guard v8`,
		`IF TG_OP OPERATOR(pg_catalog.<>) 'DELETE' AND (NEW."fence""token" OPERATOR(pg_catalog.>=) OLD."fence""token" AND NEW."version" OPERATOR(pg_catalog.>) OLD."version" OR TG_OP OPERATOR(pg_catalog.=) 'INSERT' AND NEW."version" IS NOT NULL) AND NEW."fence""token" OPERATOR(pg_catalog.>=) pg_catalog.pg_sequence_last_value(@fencedsql_floor_seq@::pg_catalog.regclass) THEN`,
		`IF (TG_OP OPERATOR(pg_catalog.=) 'INSERT' OR TG_OP OPERATOR(pg_catalog.=) 'UPDATE') AND (NEW."fence""token" IS NULL OR NEW."version" IS NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'not_null_violation', TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA, COLUMN = CASE WHEN NEW."fence""token" IS NULL THEN 'fence"token' ELSE 'version' END,`,
		`IF OLD."fence""token" IS NULL OR OLD."version" IS NULL THEN`,
		`OLD.xmin OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()::pg_catalog.xid`,
		`d := ((x OPERATOR(pg_catalog.-) (cur OPERATOR(pg_catalog.%) 4294967296)) OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296;`,
		`ERRCODE = 'FNCD1'`,
		`-- fencedsql one-statement delete v5`,
		`CREATE OR REPLACE FUNCTION "shop"."fencedsql_fence_accounts"(cur bigint, tok bigint) RETURNS integer LANGUAGE sql COST 1000 AS $fencedsql$`,
		`SELECT /* fencedsql one-statement delete v5 */ CASE WHEN cur OPERATOR(pg_catalog.=) tok AND tok OPERATOR(pg_catalog.>=) pg_catalog.pg_sequence_last_value(@fencedsql_floor_seq@::pg_catalog.regclass) THEN 1 ELSE "shop"."fencedsql_fenced_accounts"(cur, tok) END`,
		`CREATE OR REPLACE FUNCTION "shop"."fencedsql_fenced_accounts"(cur bigint, tok bigint) RETURNS integer LANGUAGE plpgsql COST 1000 AS`,
		`IF cur OPERATOR(pg_catalog.<) tok AND tok OPERATOR(pg_catalog.>=) pg_catalog.pg_sequence_last_value(@fencedsql_floor_seq@::pg_catalog.regclass) THEN`,
		`IF cur IS NULL OR cur OPERATOR(pg_catalog.>) tok THEN`,
		`RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = 'fence"token'`,
		`fl := (SELECT f.floor FROM @fencedsql_floor_table@ f WHERE f.id OPERATOR(pg_catalog.=) 1);`,
		`CREATE TABLE IF NOT EXISTS fencedsql_floor (`,
		`CREATE SEQUENCE IF NOT EXISTS fencedsql_floor_seq MINVALUE 0 START WITH 0`,
		`GRANT SELECT ON SEQUENCE fencedsql_floor_seq TO PUBLIC`,
		`CREATE TRIGGER fencedsql_floor_sync AFTER INSERT OR UPDATE ON fencedsql_floor FOR EACH ROW EXECUTE FUNCTION fencedsql_floor_sync()`,
		`ALTER TABLE fencedsql_floor ENABLE ALWAYS TRIGGER fencedsql_floor_sync`,
		`-- fencedsql floor sync v2`,
		`REVOKE ALL ON FUNCTION fencedsql_floor_sync() FROM PUBLIC`,
		`IF TG_TABLE_NAME IS DISTINCT FROM 'fencedsql_floor' OR TG_NAME IS DISTINCT FROM 'fencedsql_floor_sync'`,
		`PERFORM pg_catalog.setval(@fencedsql_floor_seq@::pg_catalog.regclass, NEW.floor, true);`,
		`UPDATE fencedsql_floor SET floor = floor WHERE id = 1`,
		`ERRCODE = 'FNCD2'`,
		`'@fencedsql_floor_table@', pg_catalog.quote_ident(pg_catalog.current_schema()) || '.fencedsql_floor'), '@fencedsql_floor_seq@', pg_catalog.quote_literal(pg_catalog.quote_ident(pg_catalog.current_schema()) || '.fencedsql_floor_seq')), '@fencedsql_schema@', pg_catalog.quote_ident(pg_catalog.current_schema())); END $fencedsql_2$`,
		`CREATE TRIGGER fencedsql_guard BEFORE INSERT OR UPDATE ON "shop"."accounts" FOR EACH ROW EXECUTE FUNCTION "shop"."fencedsql_guard_accounts"()`,
		`CREATE TRIGGER fencedsql_guard_delete AFTER DELETE ON "shop"."accounts" FOR EACH ROW WHEN ((COALESCE(pg_catalog.current_setting('fencedsql_guard.delete_statement', true), '') OPERATOR(pg_catalog.=) pg_catalog.concat('"shop"."accounts"'::pg_catalog.regclass::pg_catalog.oid, '/', pg_catalog.statement_timestamp()) AND OLD."fence""token" OPERATOR(pg_catalog.<=) pg_catalog.current_setting('fencedsql_guard.delete_token', true)::pg_catalog.int8) IS NOT TRUE) EXECUTE FUNCTION "shop"."fencedsql_guard_accounts"()`,
		`ALTER TABLE "shop"."accounts" ENABLE ALWAYS TRIGGER fencedsql_guard_delete`,
		`CREATE TRIGGER fencedsql_guard_truncate BEFORE TRUNCATE ON "shop"."accounts" FOR EACH STATEMENT`,
		`ALTER TABLE "shop"."accounts" ENABLE ALWAYS TRIGGER fencedsql_guard`,
		`ALTER TABLE "shop"."accounts" ENABLE ALWAYS TRIGGER fencedsql_guard_truncate`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("GuardDDL lacks %q:\n%s", want, all)
		}
	}
	if un := g.UnguardDDL(dialect.TableName{Schema: "Shop", Name: "Accounts"}); len(un) != 3 || un[0] != `DROP FUNCTION IF EXISTS "shop"."fencedsql_guard_accounts"() CASCADE` ||
		un[1] != `DROP FUNCTION IF EXISTS "shop"."fencedsql_fence_accounts"(bigint, bigint)` || un[2] != `DROP FUNCTION IF EXISTS "shop"."fencedsql_fenced_accounts"(bigint, bigint)` {
		t.Errorf("UnguardDDL = %q", un)
	}
	// A column name holding the dollar-quote tag gets another tag.
	ddl = g.GuardDDL(dialect.TableName{Name: "t"}, "a$fencedsql$b", "version")
	if !strings.Contains(ddl[15], "AS $fencedsql_1$") || !strings.HasPrefix(ddl[15], "DO $fencedsql_3$") || !strings.HasSuffix(ddl[15], "$fencedsql_3$") {
		t.Errorf("dollar tags not changed:\n%s", ddl[15])
	}
	// An unqualified table: the fence names the function it calls in the installer's
	// schema (its body is parsed under the caller's search_path where it is inlined).
	if all := strings.Join(ddl, "\n"); !strings.Contains(all, `ELSE @fencedsql_schema@."fencedsql_fenced_t"(cur, tok) END`) ||
		!strings.Contains(all, `, '@fencedsql_schema@', pg_catalog.quote_ident(pg_catalog.current_schema())); END`) {
		t.Errorf("unqualified table: the fence does not name its function's schema:\n%s", all)
	}
	// Long names are shortened with a hash, distinctly.
	long := strings.Repeat("x", 55)
	a, b := g.UnguardDDL(dialect.TableName{Name: long + "_one"})[0], g.UnguardDDL(dialect.TableName{Name: long + "_two"})[0]
	if a == b || len(a) > len(`DROP FUNCTION IF EXISTS ""() CASCADE`)+63 {
		t.Errorf("long names: %q, %q", a, b)
	}
	q, args := g.GuardInstalledQuery(dialect.TableName{Name: "Accounts"})
	if !strings.Contains(q, "pg_trigger") || len(args) != 13 || args[12] != "%fencedsql floor sync v2%" || args[6] != "%fencedsql one-statement delete v5%" || args[3] != "fencedsql_guard_accounts" || args[4] != "%fencedsql guard v8%" || args[8] != "fencedsql_floor_sync" ||
		args[11] != "%COALESCE(current_setting('fencedsql_guard.delete_statement'%" || !strings.Contains(q, "pg_get_triggerdef(t.oid) LIKE $12") {
		t.Errorf("GuardInstalledQuery = %q %v", q, args)
	}
}

// The one-statement DELETE's fragment: the fence function's call on the row's token
// column and the token, then the mark, set once per statement by an uncorrelated
// subquery (the token; the table's oid, from a regclass constant, and the statement's
// start time) where the fence function accepts the token itself (the floor's check);
// the token is a placeholder both times, never text, and every argument is cast to
// bigint (an overload of the fence's name cannot take the call: red-team rt57b F1).
func TestDeleteFenceFragment(t *testing.T) {
	f := postgres.Dialect.(dialect.DeleteFencer)
	mark, check := f.DeleteFence(dialect.TableName{Schema: "Shop", Name: "Accounts"}, `fence"token`)
	tok := dialect.TokenSlot + `::pg_catalog.int8`
	want := `"shop"."fencedsql_fence_accounts"("fence""token"::pg_catalog.int8, ` + tok + `) IS NOT NULL AND (SELECT pg_catalog.set_config('fencedsql_guard.delete_token', ` + tok + `::pg_catalog.text, true)` +
		` OPERATOR(pg_catalog.||) pg_catalog.set_config('fencedsql_guard.delete_statement', pg_catalog.concat('"shop"."accounts"'::pg_catalog.regclass::pg_catalog.oid, '/', pg_catalog.statement_timestamp()), true)` +
		` WHERE "shop"."fencedsql_fence_accounts"(` + tok + `, ` + tok + `) IS NOT NULL) IS NOT NULL`
	if mark != want || check != "" {
		t.Errorf("DeleteFence = %q, %q\nwant %q, \"\"", mark, check, want)
	}
	if mark, _ := f.DeleteFence(dialect.TableName{Name: "it's"}, "tok"); !strings.Contains(mark, `'"it''s"'::pg_catalog.regclass`) {
		t.Errorf("a quote in the table's name is not doubled in the literal: %q", mark)
	}
}
