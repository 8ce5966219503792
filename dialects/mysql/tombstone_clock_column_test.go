package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneClockColumnChecked: the tombstone table's deleted_at retyped so that a
// tombstone is dated earlier than written (DATE: midnight, which PurgeTombstones(1h)
// removes at once, and a stale holder then re-creates the key; red-team rt46b F3) is
// reported by schema.Check with a Fix that restores DATETIME(6) NOT NULL, and the
// pool refuses guarded writes meanwhile (ErrSchema).
func TestTombstoneClockColumnChecked(t *testing.T) {
	for _, typ := range []string{"DATE NOT NULL", "DATETIME NOT NULL", "DATETIME(6) NULL", "TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)", "VARCHAR(40) NOT NULL", "YEAR NOT NULL"} {
		t.Run(strings.Fields(typ)[0]+"_"+strings.Fields(typ)[1], func(t *testing.T) {
			_, admin, db := absentMy(t)
			testdb.Exec(t, admin, "ALTER TABLE fencedsql_tomb_acc MODIFY deleted_at "+typ)
			problems := accCheckProblems(t, admin)
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p, "deleted_at")
			}
			if !found {
				t.Fatalf("deleted_at %s: schema.Check reports %q, want the tombstone table's deleted_at", typ, problems)
			}
			if err := writeAs(db, 70, "INSERT INTO acc (id) VALUES (7)"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("guarded INSERT with deleted_at %s: %v, want ErrSchema", typ, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reports {
				testdb.Exec(t, admin, r.Fix...)
			}
			if problems := accCheckProblems(t, admin); len(problems) != 0 {
				t.Fatalf("after the Fix: %q", problems)
			}
		})
	}
}
