package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// twoStepReachDefault is the refusal's reason when the dialect's answer gives none.
const twoStepReachDefault = "a DELETE run as two statements (the fencing UPDATE, then the DELETE of the rows it stamped) on a table where an UPDATE may not reach every row a DELETE reaches (row-level security): a row only the DELETE reaches would be neither fenced nor deleted"

// twoStepReaches refuses p, a DELETE about to be sent as two statements, when its
// table's dialect.TwoStepDeleteChecker verdict (tableRow: asked once per table and
// pool, with the lazy schema checks on) says that the fencing UPDATE may not reach
// every row the DELETE reaches (PostgreSQL: row-level security whose UPDATE policies
// differ from its DELETE ones). Sent anyway, the two statements would delete only the
// rows the UPDATE stamped: a stale DELETE of a row the UPDATE cannot see got no
// ErrFenced, and a current one deleted nothing, both reporting success (red-team
// rt47i F1, F2). The refusal is an *UnsupportedError with the dialect's reason;
// nothing of the DELETE is sent. A dialect without the capability, and a pool with
// the schema checks off, are not asked.
func (c *conn) twoStepReaches(ctx context.Context, p *plan.Plan) error {
	k, ok := c.core.dialect.(dialect.TwoStepDeleteChecker)
	if !ok || !c.core.cfg.schemaCheck || p.Guard == nil {
		return nil
	}
	row, err := c.tableRow(ctx, &c.core.twoStepDelete, p.Guard, "two-statement delete", k.TwoStepDeleteQuery)
	if err != nil {
		return err
	}
	if len(row) >= 1 && row[0] == "1" {
		return nil
	}
	reason := twoStepReachDefault
	if len(row) >= 2 && row[1] != "" {
		reason = row[1]
	}
	c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
	return &UnsupportedError{Table: p.Guard.String(), Reason: reason}
}

// rowSecurityActive reports whether row-level security is in force on g for the
// pool's role, from the third column of the same dialect.TwoStepDeleteChecker verdict
// (one catalog query per table and pool, cached with the DELETE's; nothing asked per
// statement): the claims of an absent key use it to tell a row a policy hid from the
// claim from a concurrent writer's (red-team rt48h F1). A dialect without the
// capability, and a pool with the schema checks off, say no.
func (c *conn) rowSecurityActive(ctx context.Context, g *plan.Table) (bool, error) {
	k, ok := c.core.dialect.(dialect.TwoStepDeleteChecker)
	if !ok || !c.core.cfg.schemaCheck || g == nil {
		return false, nil
	}
	row, err := c.tableRow(ctx, &c.core.twoStepDelete, g, "two-statement delete", k.TwoStepDeleteQuery)
	if err != nil {
		return false, err
	}
	return len(row) >= 3 && row[2] == "1", nil
}
