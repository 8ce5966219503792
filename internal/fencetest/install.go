package fencetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// Guard installs the guards of the tables specs name, as an operator would: it runs
// schema.Check on db and sends every statement of every report's Fix through db, in
// order. Any error fails the test; the statement that failed is in the message.
func Guard(t testing.TB, ctx context.Context, db *sql.DB, d dialect.Dialect, specs ...schema.GuardSpec) {
	t.Helper()
	reports, err := schema.Check(ctx, db, d, specs...)
	if err != nil {
		t.Fatalf("schema.Check: %v", err)
	}
	for _, r := range reports {
		for _, s := range r.Fix {
			if _, err := db.ExecContext(ctx, s); err != nil {
				t.Fatalf("%v\n-- statement:\n%s", err, s)
			}
		}
	}
}
