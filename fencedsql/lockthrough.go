package fencedsql

import (
	"context"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// lockThrough refuses a locking read that names no guarded table but reads a view
// over one (plan.Plan.LockThrough) when the statement carries a token: the server
// locks the guarded table's rows through the view and nothing claims them, so an older
// holder's later write would be accepted (docs/design.md G10). The dialect's
// dialect.ViewLockChecker answers for each relation name, once per pool (per
// connection once a statement may have changed how it resolves names, like
// tableVerdict), when the lazy schema checks are on. Both answers are cached: a yes
// refuses, and a view created over a guarded table after the pool asked is seen by
// pools opened later, as a guarded table's descendants and the registry's tables are.
func (c *conn) lockThrough(ctx context.Context, p *plan.Plan) error {
	if len(p.LockThrough) == 0 || !c.core.cfg.schemaCheck || !c.hasToken(ctx) {
		return nil
	}
	k, ok := c.core.dialect.(dialect.ViewLockChecker)
	if !ok {
		return nil
	}
	for _, r := range p.LockThrough {
		yes, err := c.viewLockVerdict(ctx, k, r)
		if err != nil {
			return err
		}
		if yes {
			return c.core.refused(&UnsupportedError{Reason: "a locking read (SELECT … FOR UPDATE/SHARE) of " + r.Text +
				", a view over a guarded table (or one whose definition this session cannot read): it locks the table's rows, which the wrapper cannot claim through a view; claim the guarded table by name, with a single-table SELECT … FOR UPDATE"})
		}
	}
	return nil
}

// viewLockVerdict is the dialect's answer for r, cached per pool (c.core.viewLock) for
// WithSchemaRecheck's interval.
func (c *conn) viewLockVerdict(ctx context.Context, k dialect.ViewLockChecker, r plan.Relation) (bool, error) {
	if err := c.samePath(ctx); err != nil {
		return false, err
	}
	if !c.namesMoved {
		if v, ok := c.core.viewLock.Load(r.Text); ok && v.(verdict).server == c.server && c.core.fresh(v.(verdict).at) {
			return v.(verdict).yes, nil
		}
	}
	tables := c.core.rw.Tables()
	guarded := make([]dialect.TableName, 0, len(tables))
	for _, g := range tables {
		guarded = append(guarded, dialect.TableName{Schema: g.Schema, Name: g.Name})
	}
	q, args := k.ViewLockQuery(dialect.Relation{Text: r.Text, Parts: r.Parts}, guarded)
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return false, checkQueryErr(ctx, c.core.dialect, r.Text, "the view check of a locking read failed", err)
	}
	yes := len(vals) == 1 && len(vals[0]) == 1 && vals[0][0] == "1"
	if !c.namesMoved {
		c.core.viewLock.Store(r.Text, verdict{yes: yes, at: time.Now(), server: c.server})
	}
	return yes, nil
}
