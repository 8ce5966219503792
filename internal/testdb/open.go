package testdb

import (
	"context"
	"database/sql"
	"testing"
)

// Open opens driverName on dsn for t, runs the setup statements on it in order and
// closes it when t ends. A failure to open, or a setup statement's error, fails t
// with the statement's text (DSNs are not logged).
func Open(t testing.TB, driverName, dsn string, setup ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatalf("open %s: %s", driverName, redactErr(dsn, err))
	}
	t.Cleanup(func() { db.Close() })
	Exec(t, db, setup...)
	return db
}

// Exec runs each statement on db in order, failing t with the statement's text and
// its error at the first that fails.
func Exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
