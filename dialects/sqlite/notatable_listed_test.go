package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestVirtualTableListedReportedAsVirtual (red-team rt33a F8): an FTS5 virtual table listed in
// fenced_tables passes Ping and the first write reports it as a table whose fencing
// columns are nullable, "rebuild the table with fence_token BIGINT NOT NULL" — advice
// that cannot be followed for a virtual table (its columns have no type or
// constraint); an R*Tree one gets "fix: ALTER TABLE t ADD COLUMN", which SQLite
// refuses on a virtual table. Now refused at the first connection with a *SchemaError
// saying t is a virtual table (its rows are the module's: it cannot be guarded), with
// no fix, as a view is.
func TestVirtualTableListedReportedAsVirtual(t *testing.T) {
	file := testdb.SQLite(t)
	testdb.Open(t, "sqlite", file, "CREATE VIRTUAL TABLE t USING fts5(id, balance, fence_token, version)", "INSERT INTO t VALUES (1, 1, 0, 0)")
	db, err := sql.Open("fenced-sqlite", file+"&fenced_tables=t")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	if err == nil {
		_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 5), "UPDATE t SET balance = 2 WHERE id = 1")
	}
	var se *fencedsql.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want a *SchemaError, got %T %v", err, err)
	}
	if !strings.Contains(se.Problem, "is a virtual table, not a table") || strings.Contains(se.Problem, "rebuild") || se.Fix != "" {
		t.Fatalf("a listed virtual table is misreported as a table:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}
