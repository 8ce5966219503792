package postgres_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := postgres.Dialect.(fencedsql.Tombstoner)
	ddl := ts.TombstoneDDL(fencedsql.TableName{Schema: "Shop", Name: "Pairs"}, []string{"a", "B"}, "tok")
	if len(ddl) != 6 {
		t.Fatalf("TombstoneDDL = %d statements", len(ddl))
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`CREATE TABLE IF NOT EXISTS "shop"."fencedsql_tombstones" (table_name text COLLATE "C" NOT NULL, pk text COLLATE "C" NOT NULL, fence_token bigint NOT NULL`,
		`CREATE OR REPLACE FUNCTION "shop"."fencedsql_tombstone_pairs"() RETURNS trigger LANGUAGE plpgsql AS $fencedsql$`,
		`VALUES ('pairs', pg_catalog.jsonb_build_array(OLD."a", OLD."B")::text, COALESCE(OLD."tok", 0), pg_catalog.now())`,
		`SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token)`,
		`t.pk = pg_catalog.jsonb_build_array(NEW."a", NEW."B")::text AND t.fence_token > NEW."tok"`,
		`ERRCODE = 'not_null_violation', COLUMN = 'tok'`,
		`CREATE TRIGGER fencedsql_tombstone_delete AFTER DELETE ON "shop"."pairs" FOR EACH ROW EXECUTE FUNCTION "shop"."fencedsql_tombstone_pairs"()`,
		`CREATE TRIGGER fencedsql_tombstone_insert BEFORE INSERT ON "shop"."pairs" FOR EACH ROW`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "search_path") {
		t.Errorf("qualified table: no search_path expected:\n%s", all)
	}
	if ddl := ts.TombstoneDDL(fencedsql.TableName{Name: "t"}, []string{"id"}, "fence_token"); !strings.Contains(ddl[1], "LANGUAGE plpgsql SET search_path FROM CURRENT AS") {
		t.Errorf("unqualified table: %s", ddl[1])
	}
	if un := ts.UntombstoneDDL(fencedsql.TableName{Name: "Pairs"}); len(un) != 1 || un[0] != `DROP FUNCTION IF EXISTS "fencedsql_tombstone_pairs"() CASCADE` {
		t.Errorf("UntombstoneDDL = %q", un)
	}
	if q, args := ts.PurgeTombstonesQuery("", 0); !strings.HasPrefix(q, `DELETE FROM "fencedsql_tombstones" WHERE deleted_at <`) || len(args) != 1 {
		t.Errorf("PurgeTombstonesQuery = %q %v", q, args)
	}
}
