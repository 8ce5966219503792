// Package sqlxtest checks, in a dialect's sqlx package tests, that importing it registers
// the fenced driver with database/sql and its bind style with sqlx.
package sqlxtest

import (
	"database/sql"
	"slices"
	"testing"

	"github.com/jmoiron/sqlx"
)

// CheckBind fails t unless driverName is registered with database/sql and sqlx rebinds
// both a ?-placeholder statement and a named query for it to want, the statement
// "UPDATE accounts SET balance = ? WHERE id = ?" in the driver's placeholders.
func CheckBind(t *testing.T, driverName, want string) {
	t.Helper()
	if !slices.Contains(sql.Drivers(), driverName) {
		t.Fatalf("importing the sqlx package did not register %q with database/sql: %v", driverName, sql.Drivers())
	}
	const q = "UPDATE accounts SET balance = ? WHERE id = ?"
	if got := sqlx.Rebind(sqlx.BindType(driverName), q); got != want {
		t.Fatalf("sqlx.Rebind(BindType(%q)) = %q, want %q", driverName, got, want)
	}
	// Named queries compile to the same placeholders.
	got, _, err := sqlx.Named("UPDATE accounts SET balance = :b WHERE id = :id", map[string]any{"b": 1, "id": 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := sqlx.Rebind(sqlx.BindType(driverName), got); got != want {
		t.Fatalf("named query rebound to %q", got)
	}
}
