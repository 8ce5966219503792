package sqlitesqlx_test

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/jmoiron/sqlx"

	_ "github.com/fencedsql/fencedsql/dialects/sqlite/sqlitesqlx"
)

func TestRebindForTheFencedDriver(t *testing.T) {
	if !slices.Contains(sql.Drivers(), "fenced-sqlite") {
		t.Fatalf("importing sqlitesqlx did not register %q with database/sql: %v", "fenced-sqlite", sql.Drivers())
	}
	const q = "UPDATE accounts SET balance = ? WHERE id = ?"
	want := "UPDATE accounts SET balance = ? WHERE id = ?"
	if got := sqlx.Rebind(sqlx.BindType("fenced-sqlite"), q); got != want {
		t.Fatalf("sqlx.Rebind(BindType(%q)) = %q, want %q", "fenced-sqlite", got, want)
	}
	// Named queries compile to the same placeholders.
	got, _, err := sqlx.Named("UPDATE accounts SET balance = :b WHERE id = :id", map[string]any{"b": 1, "id": 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := sqlx.Rebind(sqlx.BindType("fenced-sqlite"), got); got != want {
		t.Fatalf("named query rebound to %q", got)
	}
}
