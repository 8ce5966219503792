package postgres_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/postgres"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := postgres.Dialect.(dialect.Tombstoner)
	key := []dialect.KeyColumn{{Name: "a", Type: "numeric(10,2)"}, {Name: "B", Type: "text", Collation: `"public"."ci"`}}
	ddl := ts.TombstoneDDL(dialect.TableName{Schema: "Shop", Name: "Pairs"}, key, "tok")
	if len(ddl) != 18 { // the ownership check first and the marks after the recorder (ownedobjects.go)
		t.Fatalf("TombstoneDDL = %d statements: %q", len(ddl), ddl)
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`CREATE TABLE IF NOT EXISTS "shop"."fencedsql_tomb_pairs" ("a" numeric(10,2) NOT NULL, "B" text COLLATE "public"."ci" NOT NULL, fence_token bigint NOT NULL, deleted_at timestamptz NOT NULL DEFAULT pg_catalog.now(), PRIMARY KEY ("a", "B"))`,
		`REVOKE ALL ON "shop"."fencedsql_tomb_pairs" FROM PUBLIC`,
		// A renamed table's tombstones are carried over (rt30a F1).
		`' || oldname || ' ON CONFLICT ("a", "B") DO UPDATE SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token)`,
		`CREATE OR REPLACE FUNCTION "shop"."fencedsql_tombstone_pairs"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fencedsql$`,
		`VALUES (OLD."a", OLD."B", GREATEST(COALESCE(OLD."tok", 0), COALESCE(fencedsql_marked, 0), COALESCE(NULLIF(pg_catalog.current_setting('fencedsql_guard.tx_token', true), '')::bigint, 0)), pg_catalog.clock_timestamp())`,
		"fencedsql_mark := pg_catalog.split_part(pg_catalog.current_setting('fencedsql_guard.delete_statement', true), '/', 1);",
		"IF fencedsql_mark = TG_RELID::text THEN",
		"ELSIF fencedsql_mark <> '' THEN",
		"IF EXISTS (WITH RECURSIVE a(oid) AS (",
		"fencedsql_marked := pg_catalog.current_setting('fencedsql_guard.delete_token', true)::bigint;",
		"$fencedsql$\n#variable_conflict use_column\n-- fencedsql tombstone guard v12",
		// The absence recorder (rt42e F1) and the probe that waits for it.
		`CREATE OR REPLACE FUNCTION "shop"."fencedsql_tombclaim_pairs"(numeric(10,2), text, bigint, boolean) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS`,
		`VALUES ($1, $2, $3, pg_catalog.clock_timestamp())`,
		`SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token), deleted_at = GREATEST(t.deleted_at, EXCLUDED.deleted_at)
      RETURNING t.fence_token INTO fencedsql_newer;`, `IF fencedsql_newer > $3 THEN`, // rt44e F2's fence
		"WHERE p.proname OPERATOR(pg_catalog.=) 'fencedsql_tombclaim_pairs' AND n.nspname OPERATOR(pg_catalog.=) 'shop'",
		`ON CONFLICT ("a", "B") DO UPDATE`,
		`SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token)`,
		`GREATEST(COALESCE(OLD."tok", 0), COALESCE(NEW."tok", 0), COALESCE(NULLIF(pg_catalog.current_setting('fencedsql_guard.tx_token', true), '')::bigint, 0))`,
		`WHERE t."a" = NEW."a" AND t."B" = NEW."B" FOR SHARE;`,
		`ERRCODE = 'not_null_violation', COLUMN = 'tok'`,
		`ERRCODE = 'serialization_failure'`,
		`FROM "shop"."pairs" x WHERE x."a" = NEW."a" AND x."B" = NEW."B"`,
		`CREATE TRIGGER fencedsql_tombstone_delete AFTER DELETE ON "shop"."pairs" FOR EACH ROW EXECUTE FUNCTION "shop"."fencedsql_tombstone_pairs"()`,
		`CREATE TRIGGER fencedsql_tombstone_insert AFTER INSERT ON "shop"."pairs" FOR EACH ROW EXECUTE FUNCTION`,
		`CREATE TRIGGER fencedsql_tombstone_rekey AFTER UPDATE ON "shop"."pairs" FOR EACH ROW WHEN (OLD."a" IS DISTINCT FROM NEW."a" OR OLD."B" IS DISTINCT FROM NEW."B") EXECUTE FUNCTION`,
		`ALTER TABLE "shop"."pairs" ENABLE ALWAYS TRIGGER fencedsql_tombstone_delete`,
		`ALTER TABLE "shop"."pairs" ENABLE ALWAYS TRIGGER fencedsql_tombstone_insert`,
		`ALTER TABLE "shop"."pairs" ENABLE ALWAYS TRIGGER fencedsql_tombstone_rekey`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	// Every table the function names is schema-qualified: a temporary table cannot
	// shadow it.
	if strings.Contains(all, `INTO "fencedsql_tomb`) || strings.Contains(all, `FROM "fencedsql_tomb`) {
		t.Errorf("unqualified tombstone table:\n%s", all)
	}
	if ddl := ts.TombstoneDDL(dialect.TableName{Name: "t"}, []dialect.KeyColumn{{Name: "id", Type: "bigint"}}, "fence_token"); !strings.Contains(ddl[1], `"public"."fencedsql_tomb_t"`) {
		t.Errorf("unqualified table: %s", ddl[1])
	}
	if un := ts.UntombstoneDDL(dialect.TableName{Schema: "shop", Name: "Pairs"}); len(un) != 2 || un[0] != `DROP FUNCTION IF EXISTS "shop"."fencedsql_tombstone_pairs"() CASCADE` || !strings.Contains(un[1], "'fencedsql_tombclaim_pairs'") {
		t.Errorf("UntombstoneDDL = %q", un)
	}
	if q, args := ts.PurgeTombstonesQuery(dialect.TableName{Schema: "shop", Name: "pairs"}, 0); !strings.HasPrefix(q, `DELETE FROM "shop"."fencedsql_tomb_pairs" WHERE deleted_at <`) || len(args) != 1 {
		t.Errorf("PurgeTombstonesQuery = %q %v", q, args)
	}
}
