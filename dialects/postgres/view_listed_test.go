package postgres_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A view listed in fenced_tables is refused as a view, naming the table behind it,
// with no ALTER TABLE fix (red-team rt31d F5: it was refused as a table whose fencing
// columns are nullable, with an ALTER TABLE … SET NOT NULL that cannot run on a view).
func TestViewListedRefusedAsView(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE VIEW accounts_v AS SELECT * FROM accounts")
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts_v")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) {
		t.Fatalf("ping: %v, want ErrSchema", err)
	}
	if !strings.Contains(se.Problem, "accounts_v is a view") || !strings.Contains(se.Problem, "(accounts)") || se.Fix != "" {
		t.Fatalf("a guarded view is misreported:\nproblem: %s\nfix: %s", se.Problem, se.Fix)
	}
}
