package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// DoorCase is one object a user or a migration adds that writes a guarded table past
// its guard: Setup creates it, Undo puts the database back, Kind is the side door
// schema.Check must report for it.
type DoorCase struct {
	Name  string
	Setup []string
	Kind  dialect.SideDoorKind
	Undo  []string
}

// ExpectDoors runs each case on raw: after its Setup, schema.Check of spec must report
// a side door of the case's Kind without an error, and a write through a fenced pool
// opened by open (write, under token 100) must fail with ErrSchema; then its Undo runs.
func ExpectDoors(t *testing.T, ctx context.Context, raw *sql.DB, d dialect.Dialect, spec schema.GuardSpec, open func() *sql.DB, write string, cases []DoorCase) {
	t.Helper()
	for _, c := range cases {
		testdb.Exec(t, raw, c.Setup...)
		reps, err := schema.Check(ctx, raw, d, spec)
		found := false
		for _, r := range reps {
			for _, sd := range r.SideDoors {
				found = found || sd.Kind == c.Kind
			}
		}
		if err != nil || !found {
			t.Errorf("%s writing the guarded table %s: Check: %v %.300q; want a %s door", c.Name, spec.Table, err, ReportProblems(reps), c.Kind)
		}
		pool := open()
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), write); !errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("%s writing the guarded table %s: a write through the pool: %v; want ErrSchema", c.Name, spec.Table, err)
		}
		pool.Close()
		testdb.Exec(t, raw, c.Undo...)
	}
}
