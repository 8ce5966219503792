package mysqlsqlx_test

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/jmoiron/sqlx"

	_ "github.com/fencedsql/fencedsql/dialects/mysql/mysqlsqlx"
)

func TestRebindForTheFencedDriver(t *testing.T) {
	if !slices.Contains(sql.Drivers(), "fenced-mysql") {
		t.Fatalf("importing mysqlsqlx did not register %q with database/sql: %v", "fenced-mysql", sql.Drivers())
	}
	const q = "UPDATE accounts SET balance = ? WHERE id = ?"
	want := "UPDATE accounts SET balance = ? WHERE id = ?"
	if got := sqlx.Rebind(sqlx.BindType("fenced-mysql"), q); got != want {
		t.Fatalf("sqlx.Rebind(BindType(%q)) = %q, want %q", "fenced-mysql", got, want)
	}
	// Named queries compile to the same placeholders.
	got, _, err := sqlx.Named("UPDATE accounts SET balance = :b WHERE id = :id", map[string]any{"b": 1, "id": 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := sqlx.Rebind(sqlx.BindType("fenced-mysql"), got); got != want {
		t.Fatalf("named query rebound to %q", got)
	}
}
