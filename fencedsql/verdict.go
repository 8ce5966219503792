package fencedsql

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// tableVerdict answers a dialect's yes-or-no question about a guarded table (the
// query returns one row holding 1 for yes): asked on the connection once per pool and
// table and kept in cache for WithSchemaRecheck's interval, or asked every time on a connection whose name resolution
// may have moved (the answer is then this connection's only). A failed query is a
// *SchemaError naming what was asked.
func (c *conn) tableVerdict(ctx context.Context, cache *sync.Map, g *plan.Table, what string, query func(dialect.TableName) (string, []any)) (bool, error) {
	row, err := c.tableRow(ctx, cache, g, what, query)
	return len(row) == 1 && row[0] == "1", err
}

// tableRow is tableVerdict's answer as the query's one row (nil: no row, or more
// than one), cached the same way.
func (c *conn) tableRow(ctx context.Context, cache *sync.Map, g *plan.Table, what string, query func(dialect.TableName) (string, []any)) ([]string, error) {
	if err := c.samePath(ctx); err != nil {
		return nil, err
	}
	if !c.namesMoved {
		if v, ok := cache.Load(g); ok && (v.(verdict).final || v.(verdict).server == c.server && c.core.fresh(v.(verdict).at)) {
			return v.(verdict).row, nil
		}
	}
	gen := c.core.namesGen.Load()
	q, args := query(dialect.TableName{Schema: g.Schema, Name: g.Name})
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return nil, checkQueryErr(ctx, c.core.dialect, g.String(), "the guard's "+what+" query failed", err)
	}
	var row []string
	if len(vals) == 1 {
		row = vals[0]
	}
	if !c.namesMoved && c.core.namesGen.Load() == gen { // not across a forgetNames (verifyTable)
		cache.Store(g, verdict{yes: len(row) == 1 && row[0] == "1", row: row, at: time.Now(), server: c.server})
	}
	return row, nil
}

// verdict is a cached answer of tableVerdict and when it was asked: like the lazy
// check's, it is trusted for WithSchemaRecheck's interval only (a red-team pass: a
// user trigger added while a pool ran never made it choose MariaDB's stamped upsert).
// A final verdict (one the wrapper reached from a statement's failure, not from the
// catalog) is kept for the pool's life.
type verdict struct {
	yes, final bool
	row        []string // tableRow's answer
	at         time.Time
	// server is the identity of the server it was asked on: a verdict that is not
	// final is trusted on a connection to that server only (serverchange.go).
	server string
}

// doubtVerdict drops the cached yes of cache for g after err, the failure of the
// one-statement form that yes allowed: unless err is a fencing refusal (the form
// worked: a newer token holds the row), the table may have changed under the verdict
// (a rule or trigger added, the guard replaced), so the next statement asks again
// instead of failing the same way until the pool is reopened.
func (k *core) doubtVerdict(cache *sync.Map, g *plan.Table, err error) {
	if err != nil && !errors.Is(err, ErrFenced) && !errors.Is(err, ErrBelowFloor) && !errors.Is(err, ErrClaimConflict) {
		cache.Delete(g)
	}
}
