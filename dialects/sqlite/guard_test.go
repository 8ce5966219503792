package sqlite_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestGuards(t *testing.T) {
	fencetest.RunGuards(t, fencetest.SQLite(), sqlite.Dialect, sqlite.IsGuardError)
}

// BenchmarkGuard reports what the guard trigger costs a fenced UPDATE (guard-cost).
func BenchmarkGuard(b *testing.B) { fencetest.BenchGuard(b, fencetest.SQLite(), sqlite.Dialect) }

func TestGuardDDLShape(t *testing.T) {
	g := sqlite.Dialect.(fencedsql.Guarder)
	ddl := g.GuardDDL(fencedsql.TableName{Schema: "aux", Name: "o'rders"}, "fence_token", "version")
	if len(ddl) != 2 || ddl[0] != `DROP TRIGGER IF EXISTS "aux"."fencedsql_guard_o'rders"` {
		t.Fatalf("GuardDDL = %q", ddl)
	}
	for _, want := range []string{
		`CREATE TRIGGER "aux"."fencedsql_guard_o'rders" BEFORE UPDATE ON "o'rders" FOR EACH ROW`,
		`WHEN NEW."fence_token" IS NOT NULL AND NEW."version" IS NOT NULL AND (NEW."fence_token" < OLD."fence_token" OR NEW."version" <= OLD."version")`,
		`RAISE(ABORT, 'fencedsql: guard on o''rders: UPDATE lowers the fence token')`,
	} {
		if !strings.Contains(ddl[1], want) {
			t.Errorf("CREATE TRIGGER lacks %q:\n%s", want, ddl[1])
		}
	}
	if un := g.UnguardDDL(fencedsql.TableName{Name: "orders"}); len(un) != 1 || un[0] != `DROP TRIGGER IF EXISTS "fencedsql_guard_orders"` {
		t.Errorf("UnguardDDL = %q", un)
	}
}
