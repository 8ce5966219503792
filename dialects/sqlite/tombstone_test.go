package sqlite_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := sqlite.Dialect.(dialect.Tombstoner)
	key := []dialect.KeyColumn{{Name: "a", Type: "INTEGER"}, {Name: "b", Type: "TEXT", Collation: "NOCASE"}}
	ddl := ts.TombstoneDDL(dialect.TableName{Schema: "aux", Name: "pairs"}, key, "tok")
	if len(ddl) != 7 {
		t.Fatalf("TombstoneDDL = %q", ddl)
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`CREATE TABLE IF NOT EXISTS "aux"."fencedsql_tomb_pairs" ("a" INTEGER NOT NULL, "b" TEXT COLLATE "NOCASE" NOT NULL, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL, PRIMARY KEY ("a", "b")) WITHOUT ROWID`,
		`CREATE TRIGGER "aux"."fencedsql_tombdel_pairs" AFTER DELETE ON "pairs" FOR EACH ROW`,
		`INSERT INTO "fencedsql_tomb_pairs" ("a", "b", fence_token, deleted_at) VALUES (OLD."a", OLD."b", coalesce(OLD."tok", 0),`,
		`CREATE TRIGGER "aux"."fencedsql_tombins_pairs" BEFORE INSERT ON "pairs" FOR EACH ROW`,
		`t."a" = NEW."a" AND t."b" = NEW."b" AND t.fence_token > NEW."tok"`,
		`CREATE TRIGGER "aux"."fencedsql_tombkey_pairs" AFTER UPDATE ON "pairs" FOR EACH ROW`,
		`WHEN OLD."a" IS NOT NEW."a" OR OLD."b" IS NOT NEW."b"`,
		`SELECT RAISE(ABORT, 'fencedsql: tombstone on pairs: NOT NULL constraint failed: pairs.tok');`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	if un := ts.UntombstoneDDL(dialect.TableName{Name: "pairs"}); len(un) != 3 || un[1] != `DROP TRIGGER IF EXISTS "fencedsql_tombins_pairs"` {
		t.Errorf("UntombstoneDDL = %q", un)
	}
}
