package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// Name resolution seen from the pool (docs/design.md G13). A guarded name's lazy
// checks hold for the relation the name resolved to when they ran. A statement that
// may make it resolve elsewhere for its own session (SET search_path, USE, ATTACH, a
// temporary table, Raw) re-arms its connection's checks (conn.rearmNames); DDL that
// may make it resolve elsewhere for every connection (a same-named table created on
// the search_path, a table renamed onto the name, the shadow dropped: plan.Plan.
// ResetsPoolNames) drops the pool's verdicts (forgetNames), and connections whose
// checks are already per connection drop theirs at their next check (syncNames). A
// connection that opens resolving names otherwise than the pool's first (a default set
// outside the wrapper since: samePath, namepath.go) caches its checks on itself too.

// forgetNames drops every verdict the pool cached about its guarded names — the lazy
// check's, the tables' dialect verdicts, their row keys, the locking reads' view
// verdicts — and moves the names generation on, so that a connection caching its own
// (namesMoved) drops them too (syncNames), and a check that ran across the change does
// not store what it saw (verifyTable).
func (k *core) forgetNames() {
	k.namesGen.Add(1)
	for _, m := range []interface{ Clear() }{&k.checked, &k.deleteFence, &k.guardInstalled, &k.claimOne, &k.locator, &k.twoStepDelete, &k.rowKeys, &k.keyed, &k.viewLock} {
		m.Clear()
	}
}

// syncNames drops c's own name verdicts when the pool's names generation moved since
// c last looked (forgetNames on any connection).
func (c *conn) syncNames() {
	if g := c.core.namesGen.Load(); g != c.namesGen {
		clear(c.checkedNames)
		c.namesGen = g
	}
}

// poolNamesMoved runs before a statement that may make a guarded name resolve
// elsewhere on every connection (p.ResetsPoolNames): the pool's verdicts are dropped
// now, and again once the statement has run (at c's next statement, or at the end of
// the transaction it runs in, whose commit is when the other connections see the
// change), so that a check another connection ran while it ran is not kept.
func (c *conn) poolNamesMoved(p *plan.Plan) {
	if !p.ResetsPoolNames {
		return
	}
	c.core.forgetNames()
	c.poolNamesPending = true
	if st := c.tx; st != nil {
		st.movedPoolNames = true
	}
}

// settlePoolNames drops the pool's verdicts again after a statement that
// poolNamesMoved flagged has run (see there).
func (c *conn) settlePoolNames() {
	if c.poolNamesPending {
		c.poolNamesPending = false
		c.core.forgetNames()
	}
}

// tempShadow refuses the check of g on c, a connection whose name resolution may have
// moved, when the dialect reports that the name resolves to a temporary table of the
// session that its catalog queries cannot see (dialect.TempShadowFinder: MariaDB,
// whose information_schema lists no temporary tables): the wrapper cannot judge that
// table's fencing columns, so every guarded write of the name on c is refused until
// the temporary table is dropped (red-team rt37b F1/F2). Connections whose names never
// moved are not asked: every statement through the pool that may create a temporary
// table of a guarded name re-arms its connection, and so does Raw.
func (c *conn) tempShadow(ctx context.Context, g *plan.Table, t dialect.TableName) error {
	f, ok := c.core.dialect.(dialect.TempShadowFinder)
	if !ok || !c.namesMoved {
		return nil
	}
	shadow, err := f.TempShadow(ctx, c.catalog(), t)
	if err != nil {
		return checkQueryErr(ctx, c.core.dialect, g.String(), "the temporary-table probe failed", err)
	}
	if shadow {
		return &SchemaError{Table: g.String(),
			Problem: "on this connection the name resolves to a TEMPORARY table, which shadows the guarded table and whose fencing columns the wrapper cannot check",
			Fix:     "drop the temporary table (DROP TEMPORARY TABLE " + g.String() + ") or give it another name"}
	}
	return nil
}
