package main

import (
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/internal/depstest"
)

// TestLinksPostgresOnly: a PostgreSQL-only service built on fencedsql and sqllock links
// pgx and nothing of the other databases (issue 24). It links sqlx: the PostgreSQL
// dialect binds "fenced-pgx" to sqlx's $n style itself, so that sqlx works unchanged.
func TestLinksPostgresOnly(t *testing.T) {
	depstest.Forbid(t, ".",
		"github.com/go-sql-driver/mysql",
		"modernc.org/sqlite",
	)
	deps := depstest.Deps(t, ".")
	for _, want := range []string{"github.com/jackc/pgx/v5/stdlib", "github.com/fencedsql/fencedsql/lockclient/sqllock"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps lacks %s: the check above would prove nothing", want)
		}
	}
}
