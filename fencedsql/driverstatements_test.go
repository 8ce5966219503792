package fencedsql_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestDriverStatementsForgotten: a statement that may drop the session's prepared
// statements (DISCARD ALL) and DDL through the pool that may move a guarded name
// (CREATE TABLE of a same-named table) each have the dialect forget the statements
// the session and driver cached, once, before the connection's next statement — under
// a driver other than pgx, PostgreSQL's DISCARD PLANS — and nothing more is sent while
// nothing moves (red-team rt57a F1, F2; driverstatements.go).
func TestDriverStatementsForgotten(t *testing.T) {
	ctx := context.Background()
	for _, move := range []string{"DISCARD ALL", "DEALLOCATE ALL", "CREATE TABLE a.accounts (id bigint)"} {
		rec := newFakeRec()
		db := openFake(t, &fakeDriver{rec: rec, full: true}, fencedsql.WithDDL(true))
		forgets := func() int {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			n := 0
			for _, e := range rec.execs {
				if e.sql == "DISCARD PLANS" {
					n++
				}
			}
			return n
		}
		if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, move); err != nil {
			t.Fatalf("%s: %v", move, err)
		}
		if n := forgets(); n != 0 {
			t.Errorf("%s: %d DISCARD PLANS before the statement's next one, want 0", move, n)
		}
		for i := 0; i < 3; i++ {
			if _, err := db.ExecContext(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
		}
		if n := forgets(); n != 1 {
			t.Errorf("%s: %d DISCARD PLANS after it, want 1", move, n)
		}
	}
}
