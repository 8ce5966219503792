package postgres_test

import (
	"context"
	"database/sql"
	"testing"
)

// rawWith opens the raw driver on dsn (closed with the test) and runs stmts on it.
func rawWith(t *testing.T, dsn string, stmts ...string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, q := range stmts {
		if _, err := raw.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return raw
}
