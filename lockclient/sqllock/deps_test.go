package sqllock

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/depstest"
)

// TestImportsNoMySQLDriverNorFencedsql checks the package's dependency rules: lockclient
// and its backends import nothing from the fencedsql package (layering), and sqllock
// does not link go-sql-driver/mysql, so that a PostgreSQL-only application does not
// (errors and the driver are recognised by reflection, see dberror.go).
func TestImportsNoMySQLDriverNorFencedsql(t *testing.T) {
	depstest.Forbid(t, ".", "github.com/go-sql-driver/mysql", "github.com/fencedsql/fencedsql/fencedsql")
}
