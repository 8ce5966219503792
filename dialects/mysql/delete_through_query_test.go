package mysql_test

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
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	fencetest.RunDeleteThroughQuery(t, raw, testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts"), "?")
}
