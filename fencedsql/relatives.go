package fencedsql

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// A pool guards the relatives of its guarded tables — their partitions and
// inheritance children (dialect.DescendantFinder), and the inheritance parents and
// partitioned roots of each (dialect.AncestorFinder), whose UPDATE and DELETE reach the
// guarded table's rows — with the guarded table's columns, as read at its first
// connection (registry.go, loadRelatives). Its rewriter cannot grow under running
// statements, so a relative that appears later is not guarded by that pool.
//
// A new descendant holds new rows only (rows reach it by its own name, or through the
// guarded table, whose writes are fenced), and is guarded by pools opened later
// (docs/design.md, "A partition is its table"). A new ancestor is another matter: a
// migration that runs ALTER TABLE acc INHERIT p, or ALTER TABLE root ATTACH PARTITION
// acc, gives the guarded table's existing rows a second name, and a write naming it
// went through the running pool unfenced (red-team rt42b F1; the database-side guard
// accepts a write that bumps the version, its documented limit). So the lazy check
// that runs before a guarded write (conn.verifyTable, when the table's verdict has expired:
// WithSchemaRecheck) also reads the table's ancestors, with the query the first
// connection reads them with, and a pool that listed a listed table as missing
// (missing.go) reads them when the table appears. An ancestor the pool does not guard
// — one a pool opened now would guard — or one it guards on other columns fails that
// write with ErrSchema naming it and stops the pool: from then on it refuses every
// statement that may write rows, of any table (the write may name the ancestor, which
// no check sees), until it is reopened (relativeBlock). A write naming the new
// ancestor before any such check ran is not seen (docs/design.md, Known open).

// relativeBlock is the pool's refusal once a check found a relative of a guarded table
// it does not guard: nil until then (the statement path's one load).
type relativeBlock struct {
	err atomic.Pointer[SchemaError]
}

// refusal returns the pool's refusal, or nil.
func (b *relativeBlock) refusal() error {
	if e := b.err.Load(); e != nil {
		return e
	}
	return nil
}

// checkRelativeBlock refuses p, planned for query, when the pool is stopped by an
// unguarded relative (relativeBlock) and p may write rows: a guarded write, or a
// statement the planner passes that may write rows (plan.Planner.MayWriteRows). Reads,
// DDL that cannot write rows, and session and transaction statements pass.
func (c *conn) checkRelativeBlock(p *plan.Plan, query string) error {
	err := c.core.relatives.refusal()
	if err == nil {
		return nil
	}
	if (p == nil || p.Kind == plan.KindPass) && !c.core.rw.MayWriteRows(query) {
		return nil
	}
	return err
}

// relativeName is the name by which a pool guards the relative (schema, name) of the
// guarded table g, as loadRelatives names it: unqualified for an unqualified guard (it
// matches a table of its name in any schema), qualified otherwise.
func relativeName(g *plan.Table, schemaName, name string) []string {
	if g.Schema != "" {
		return []string{schemaName, name}
	}
	return []string{name}
}

// sameTableColumns reports whether the guards a and b fence on the same columns,
// compared as the dialect compares column names.
func sameTableColumns(d dialect.Dialect, a, b *plan.Table) bool {
	return dialect.SameColumnName(d, a.TokenCol, b.TokenCol) && dialect.SameColumnName(d, a.VerCol, b.VerCol)
}

// checkAncestors reads, on c, the ancestors of the guarded table g (and of its
// descendants: dialect.AncestorFinder) and fails when one is not guarded by the pool,
// or is guarded on other columns than g: the pool is then stopped (relativeBlock) and
// the error, ErrSchema naming the ancestor, returned. A failed query is ErrSchema too
// (the write is refused; the pool is not stopped). Dialects without ancestors: nil.
func (c *conn) checkAncestors(ctx context.Context, g *plan.Table) error {
	k := c.core
	f, ok := k.dialect.(dialect.AncestorFinder)
	if !ok {
		return nil
	}
	q, args := f.AncestorsQuery(dialect.TableName{Schema: g.Schema, Name: g.Name})
	rows, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return checkQueryErr(ctx, c.core.dialect, g.String(), "the query for the table's inheritance parents and partitioned roots failed", err)
	}
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		anc := dialect.CatalogName(r[0], r[1])
		var se *SchemaError
		switch h := k.rw.Lookup(relativeName(g, r[0], r[1])); {
		case h == nil:
			se = &SchemaError{Table: g.String(),
				Problem: fmt.Sprintf("%s became an inheritance parent or partitioned root of the table (or of one of its descendants) after the pool opened: its UPDATE and DELETE reach the table's rows, and this pool, which read the table's relatives when it opened, does not guard it; the pool refuses every statement that may write rows until it is reopened", anc.String()),
				Fix:     "reopen the pools (a pool opened now guards " + anc.String() + " with the table's columns)"}
		case !sameTableColumns(k.dialect, h, g):
			se = &SchemaError{Table: g.String(),
				Problem: fmt.Sprintf("%s, an inheritance parent or partitioned root of the table (or of one of its descendants), is guarded on the columns %s and %s, the table on %s and %s: the same rows would be fenced on other columns by each name; the pool refuses every statement that may write rows until it is reopened", anc.String(), h.TokenCol, h.VerCol, g.TokenCol, g.VerCol),
				Fix:     "guard both on the same columns"}
		default:
			continue
		}
		k.relatives.err.CompareAndSwap(nil, se)
		k.cfg.logger.WarnContext(ctx, "fencedsql: an unguarded relative of a guarded table appeared; the pool refuses writes until it is reopened", "err", se.Error())
		return se
	}
	return nil
}

// relativeConflict is loadRelatives' refusal of a relative of the guarded table g
// that is guarded (h, or an earlier relative's guard) on other columns than g (red-team
// rt42b F2: Guard("acc") and Guard("acc_c", TokenColumn("tok2"), …) on a child of acc
// fenced the child's rows on fence_token through acc and on tok2 by their own name,
// and each name's stale write overwrote the other's newer one). A *ConfigError when
// the configuration names both tables (listed), else ErrSchema (a registry or the
// guard's triggers named one).
func relativeConflict(listed map[string]bool, g *plan.Table, rel string, relTok, relVer, other string) error {
	problem := fmt.Sprintf("%s, a partition, inheritance child or parent of the guarded table %s, is guarded on the columns %s and %s, but %s on %s and %s: the same rows would be fenced on other columns by each name, and a stale write through one overwrites a newer one made through the other",
		rel, g.String(), relTok, relVer, g.String(), g.TokenCol, g.VerCol)
	if other != "" {
		problem = fmt.Sprintf("%s is a relative of the guarded tables %s and %s, which are guarded on other columns (%s and %s; %s and %s): its rows would be fenced on other columns by each name",
			rel, other, g.String(), relTok, relVer, g.TokenCol, g.VerCol)
	}
	a, b := strings.ToLower(g.Base().String()), strings.ToLower(rel)
	if other != "" {
		b = strings.ToLower(other)
	}
	if listed[a] && listed[b] {
		return configErr("%s; guard them on the same columns", problem)
	}
	return &SchemaError{Table: g.String(), Problem: problem, Fix: "guard them on the same columns (fencedsql-schema, fenced_token_column, TokenColumn)"}
}
