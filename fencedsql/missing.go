package fencedsql

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// A pool allowed to run DDL (WithDDL(true), fenced_allow=ddl) may be the one that
// creates its listed tables, so a listed table that does not exist at its first
// connection does not fail the pool as it does otherwise (registry.go). But a typo in
// the list (fenced_tables=acounts) then leaves the table meant unguarded, and a pool
// opened with sql.Open has no logger to say so (red-team rt34d F2). So, until every
// such table exists, the pool refuses every statement that may write rows — of any
// table: the write may be meant for the one the typo left out — with ErrSchema naming
// the missing table; DDL (creating it), reads, and session and transaction statements
// pass (plan.Planner.MayWriteRows). Each write asks again, on its connection, whether
// the missing tables exist now; once they all do (outside a transaction: one that
// created a table may still roll back) the pool forgets them, and its statement path is
// one atomic load again. A table found is asked for its ancestors first (relatives.go):
// one the pool does not guard — it read no relatives of a table that did not exist —
// stops the pool's writes until it is reopened. A pool that creates its tables before it writes (CREATE TABLE
// IF NOT EXISTS first, or a migration tool that writes its own bookkeeping only after
// the DDL) works as before; one that writes before its listed tables exist is refused
// until they do.

// missingTable is a listed table found missing (or not a table) at the pool's first
// connection, with why.
type missingTable struct {
	g   *plan.Table
	err error
}

// missingListed are the pool's listed tables that did not exist at its first
// connection (WithDDL). any is the statement path's one load.
type missingListed struct {
	any    atomic.Bool
	mu     sync.Mutex
	tables []missingTable
}

// set records the missing tables (once, at the pool's first connection).
func (m *missingListed) set(t []missingTable) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tables = t
	m.any.Store(len(t) > 0)
}

// checkMissing refuses p, planned for query, when the pool has listed tables that did
// not exist yet and p may write rows: after asking again, on c, whether each exists now
// (one catalog query per missing table, only while one is missing). A table found
// outside a transaction is forgotten by the pool.
func (c *conn) checkMissing(ctx context.Context, p *plan.Plan, query string) error {
	m := &c.core.missing
	if !m.any.Load() {
		return nil
	}
	if p.Kind == plan.KindPass && !c.core.rw.MayWriteRows(query) {
		return nil
	}
	m.mu.Lock()
	tables := append([]missingTable(nil), m.tables...)
	m.mu.Unlock()
	var still []missingTable
	var refusal error
	for _, t := range tables {
		err := c.core.checkListed(ctx, c, t.g, nil)
		if err == nil {
			// It exists now: made, perhaps, a partition or child of a table the pool
			// read no relatives of at its first connection (red-team rt42b F1). An
			// ancestor the pool does not guard stops it (checkAncestors).
			if err = c.checkAncestors(ctx, t.g); err == nil {
				continue
			}
			if c.core.relatives.refusal() != nil {
				return err
			}
		}
		still = append(still, missingTable{g: t.g, err: err})
		if refusal == nil {
			refusal = missingErr(t.g, err)
		}
	}
	if c.tx == nil && len(still) < len(tables) {
		m.mu.Lock()
		m.tables = forgetFound(m.tables, still)
		m.any.Store(len(m.tables) > 0)
		m.mu.Unlock()
	}
	if refusal != nil {
		c.core.cfg.logger.WarnContext(ctx, "fencedsql: statement refused", "err", refusal.Error())
		return refusal
	}
	return nil
}

// forgetFound keeps, of tables, those still missing (by table).
func forgetFound(tables, still []missingTable) []missingTable {
	var out []missingTable
	for _, t := range tables {
		for _, s := range still {
			if s.g.String() == t.g.String() {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// missingErr is the refusal of a write while the listed table g does not exist (why:
// checkListed's verdict): ErrSchema, naming it.
func missingErr(g *plan.Table, why error) error {
	se := &SchemaError{Table: g.String(),
		Problem: "a listed table (fenced_tables, Guard) does not exist, or is not a table: the pool (fenced_allow=ddl) refuses statements that may write rows until it does, since a typo in the list would leave the table meant unguarded",
		Fix:     "create the table (DDL passes), or correct the name in fenced_tables or Guard"}
	var inner *SchemaError
	if errors.As(why, &inner) {
		se.Problem += " (" + inner.Problem + ")"
		se.Err = inner.Err // a check query that failed
	} else {
		se.Err = why
	}
	return se
}
