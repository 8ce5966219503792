package fencedsql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// triggerGuard is the lazy check's refusal of the side doors a statement through this
// pool can open itself (dialect.TriggerDoorFinder): the triggers on other tables that
// write the guarded table, the table's own BEFORE row triggers that may assign its
// token or version column (undoing the fencing NULL before the NOT NULL check), the
// updatable views over it, (PostgreSQL) the rules on or naming it, and a guard a table
// swap lost (the guard's objects named for it survive, its triggers do not). nil when there
// are none (or the dialect has no finder), else a *SchemaError (ErrSchema) naming the
// table, each door and the statements that close them, as schema.Check reports them
// among its side doors: the table's guarded writes are refused while a door exists,
// so that it is impossible to miss. A failed catalog query is a SchemaError wrapping
// it.
func triggerGuard(ctx context.Context, query dialect.CatalogQuery, d dialect.Dialect, g *plan.Table, table dialect.TableName) error {
	f, ok := d.(dialect.TriggerDoorFinder)
	if !ok {
		return nil
	}
	doors, err := f.TriggerDoors(ctx, query, dialect.SideDoorTable{Table: table, TokenColumn: g.TokenCol, VersionColumn: g.VerCol})
	if err != nil {
		return checkQueryErr(ctx, d, g.String(), "the side door query failed", err)
	}
	var problems, fix []string
	for _, sd := range doors {
		if sd.Note {
			continue
		}
		problems = append(problems, string(sd.Kind)+" "+sd.Object+": "+sd.Problem)
		fix = append(fix, sd.Fix...)
	}
	if len(problems) > 0 {
		return &SchemaError{Table: g.String(), Problem: strings.Join(problems, "; "), Fix: strings.Join(fix, "; ")}
	}
	return nil
}
