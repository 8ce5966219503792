package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/depstest"
)

// TestDoesNotImportSqlx: the dialect alone does not link sqlx; its bind style is
// registered by the sqlx sub-package (see the package doc).
func TestDoesNotImportSqlx(t *testing.T) {
	depstest.Forbid(t, ".", "github.com/jmoiron/sqlx")
}
