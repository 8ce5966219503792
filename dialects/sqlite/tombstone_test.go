package sqlite_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := sqlite.Dialect.(fencedsql.Tombstoner)
	ddl := ts.TombstoneDDL(fencedsql.TableName{Schema: "aux", Name: "pairs"}, []string{"a", "b"}, "tok")
	if len(ddl) != 5 {
		t.Fatalf("TombstoneDDL = %q", ddl)
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`CREATE TABLE IF NOT EXISTS "aux"."fencedsql_tombstones" (`,
		`CREATE TRIGGER "aux"."fencedsql_tombdel_pairs" AFTER DELETE ON "pairs" FOR EACH ROW`,
		`INSERT INTO "fencedsql_tombstones" (table_name, pk, fence_token, deleted_at) VALUES ('pairs', json_array(OLD."a", OLD."b"), coalesce(OLD."tok", 0),`,
		`CREATE TRIGGER "aux"."fencedsql_tombins_pairs" BEFORE INSERT ON "pairs" FOR EACH ROW`,
		`t.pk = json_array(NEW."a", NEW."b") AND t.fence_token > NEW."tok"`,
		`SELECT RAISE(ABORT, 'fencedsql: tombstone on pairs: NOT NULL constraint failed: pairs.tok');`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	if un := ts.UntombstoneDDL(fencedsql.TableName{Name: "pairs"}); len(un) != 2 || un[1] != `DROP TRIGGER IF EXISTS "fencedsql_tombins_pairs"` {
		t.Errorf("UntombstoneDDL = %q", un)
	}
}
