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

// guardedErr opens a fenced pool listing table on file and returns the first error of
// its Ping or of a fenced UPDATE of table (id 1).
func guardedErr(t *testing.T, file, table string) error {
	t.Helper()
	db, err := sql.Open("fenced-sqlite", file+"&fenced_tables="+table)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		return err
	}
	_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 30), "UPDATE "+table+" SET balance = 1 WHERE id = 1")
	return err
}

// A generated fencing column is reported as generated, not as missing, and no ADD
// COLUMN of a column that exists is proposed (red-team rt31d F6: pragma_table_info
// hides generated columns).
func TestGeneratedFencingColumnReportedAsGenerated(t *testing.T) {
	file := testdb.SQLite(t)
	testdb.Open(t, "sqlite", file,
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL GENERATED ALWAYS AS (1) STORED)",
		"INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 20)")
	var se *fencedsql.SchemaError
	if err := guardedErr(t, file, "accounts"); !errors.As(err, &se) {
		t.Fatalf("want a *SchemaError, got %v", err)
	}
	if !strings.Contains(se.Problem, "version is a generated column") || strings.Contains(se.Problem, "missing") || strings.Contains(se.Fix, "ADD COLUMN") {
		t.Fatalf("a generated fencing column is misreported:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}

// A view listed as guarded is refused as a view, at the first connection, with no
// fix (red-team rt31d F4/F5: it was refused as "nullable", with a fix that cannot run).
func TestViewListedRefusedAsView(t *testing.T) {
	file := testdb.SQLite(t)
	testdb.Open(t, "sqlite", file,
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE VIEW accounts_v AS SELECT * FROM accounts")
	var se *fencedsql.SchemaError
	if err := guardedErr(t, file, "accounts_v"); !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("want a *SchemaError, got %v", err)
	}
	if !strings.Contains(se.Problem, "accounts_v is a view") || se.Fix != "" {
		t.Fatalf("a guarded view is misreported:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}
