package sqlite_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestGuards(t *testing.T) {
	fencetest.RunGuards(t, fencetest.SQLite(), sqlite.Dialect, sqlite.IsGuardError)
}

// BenchmarkGuard reports what the guard trigger costs a fenced UPDATE (guard-cost).
func BenchmarkGuard(b *testing.B) { fencetest.BenchGuard(b, fencetest.SQLite(), sqlite.Dialect) }

func TestGuardDDLShape(t *testing.T) {
	g := sqlite.Dialect.(dialect.Guarder)
	ddl := g.GuardDDL(dialect.TableName{Schema: "aux", Name: "o'rders"}, "fence_token", "version")
	if len(ddl) != 6 || ddl[2] != `DROP TRIGGER IF EXISTS "aux"."fencedsql_guard_o'rders"` ||
		ddl[0] != `CREATE TABLE IF NOT EXISTS "aux"."fencedsql_floor" (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), floor INTEGER NOT NULL CHECK (floor >= 0))` {
		t.Fatalf("GuardDDL = %q", ddl)
	}
	for _, want := range []string{
		`CREATE TRIGGER "aux"."fencedsql_guard_o'rders" BEFORE UPDATE ON "o'rders" FOR EACH ROW`,
		`WHEN typeof(NEW."fence_token") <> 'integer' OR typeof(NEW."version") <> 'integer' OR NEW."fence_token" < OLD."fence_token" OR NEW."version" <= OLD."version" OR NOT COALESCE(NEW."fence_token" >= (SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1), 0)`,
		`SELECT CASE WHEN NEW."fence_token" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: o''rders.fence_token (fencedsql guard)') WHEN NEW."version" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: o''rders.version (fencedsql guard)') WHEN`,
		`RAISE(ABORT, 'fencedsql: guard on o''rders: UPDATE lowers the fence token')`,
		`ELSE RAISE(ABORT, 'fencedsql: token floor on o''rders: token below the floor')`,
	} {
		if !strings.Contains(ddl[3], want) {
			t.Errorf("CREATE TRIGGER lacks %q:\n%s", want, ddl[3])
		}
	}
	if want := `CREATE TRIGGER "aux"."fencedsql_floor_o'rders" BEFORE INSERT ON "o'rders" FOR EACH ROW` + "\n" +
		`WHEN typeof(NEW."fence_token") <> 'integer' OR typeof(NEW."version") <> 'integer' OR NOT COALESCE(NEW."fence_token" >= (SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1), 0)` + "\nBEGIN\n  /* fencedsql guard v2 */\n" +
		`  SELECT CASE WHEN NEW."fence_token" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: o''rders.fence_token (fencedsql guard)') WHEN NEW."version" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: o''rders.version (fencedsql guard)') ` +
		`WHEN typeof(NEW."fence_token") <> 'integer' THEN RAISE(ABORT, 'fencedsql: guard on o''rders: fence_token is not an integer') ` +
		`WHEN typeof(NEW."version") <> 'integer' THEN RAISE(ABORT, 'fencedsql: guard on o''rders: version is not an integer') ELSE RAISE(ABORT, 'fencedsql: token floor on o''rders: token below the floor') END;` + "\nEND"; ddl[5] != want {
		t.Errorf("floor trigger = %q, want %q", ddl[5], want)
	}
	if un := g.UnguardDDL(dialect.TableName{Name: "orders"}); len(un) != 2 || un[0] != `DROP TRIGGER IF EXISTS "fencedsql_guard_orders"` || un[1] != `DROP TRIGGER IF EXISTS "fencedsql_floor_orders"` {
		t.Errorf("UnguardDDL = %q", un)
	}
}
