package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// floorUnguardedProblem and floorUnguardedFix are the words of floorGuard's refusal.
const (
	floorUnguardedProblem = "the table is not guarded on this server although the database has a token floor: the floor is enforced only by the guard's triggers, so a write here would take a token below it " +
		"(after an asynchronous failover the guard's installation may have been lost with the replication tail)"
	floorUnguardedFix = "re-run fencedsql-schema -check/-apply with the application's table list (schema.Check's Fix installs the guard) before the application writes"
)

// floorGuard is the lazy check's floor coverage (docs/design.md G14): a table the pool
// guards (fenced_tables, RegisterTables, Guard, the records) that carries no
// floor-reading guard, in a database whose guards read a token floor
// (schema.FloorUnheld), is refused with a *SchemaError (ErrSchema): the wrapper's
// fencing alone cannot honour the floor, and after an asynchronous failover lost the
// guard's installation a token below the floor the hook raised would write it
// (red-team rt54c F1). It runs inside verifyTable, cached with its verdict: no
// statement is added to a write. A pool whose first connection found nothing recorded
// as guarded (no registry row, no guard trigger: k.guardRecorded false) skips it — a
// database without guards has no floor in force, and a mock driver answers none of
// these queries. A database without a floor keeps wrapper-only fencing.
func (c *conn) floorGuard(ctx context.Context, g *plan.Table, t dialect.TableName) error {
	k := c.core
	if !k.guardRecorded.Load() {
		return nil
	}
	unheld, err := schema.FloorUnheld(ctx, c.catalog(), k.dialect, t)
	if err != nil {
		return checkQueryErr(ctx, k.dialect, g.String(), "the floor coverage query failed", err)
	}
	if unheld {
		return &SchemaError{Table: g.String(), Problem: floorUnguardedProblem, Fix: floorUnguardedFix}
	}
	return nil
}
