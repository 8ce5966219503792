package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestDeleteThroughQueryRunsAsExec: a plain DELETE (no RETURNING) sent with
// QueryContext runs as Exec runs it — the two-statement DELETE (no guard installed), in
// the wrapper's own transaction outside a caller's — and answers with no rows
// (fencetest.RunDeleteThroughQuery).
func TestDeleteThroughQueryRunsAsExec(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, selectOnlyTable)
	fencetest.RunDeleteThroughQuery(t, raw, testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts"), "$1")
}
