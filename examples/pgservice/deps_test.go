package main

import (
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/internal/depstest"
)

// TestLinksPostgresOnly: a PostgreSQL-only service built on fencedsql and sqllock links
// pgx and nothing of the other databases, nor sqlx (issue 24).
func TestLinksPostgresOnly(t *testing.T) {
	depstest.Forbid(t, ".",
		"github.com/go-sql-driver/mysql",
		"github.com/jmoiron/sqlx",
		"modernc.org/sqlite",
	)
	deps := depstest.Deps(t, ".")
	for _, want := range []string{"github.com/jackc/pgx/v5/stdlib", "github.com/fencedsql/fencedsql/lockclient/sqllock"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps lacks %s: the check above would prove nothing", want)
		}
	}
}
