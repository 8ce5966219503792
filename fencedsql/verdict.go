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
	if err := c.samePath(ctx); err != nil {
		return false, err
	}
	if !c.namesMoved {
		if v, ok := cache.Load(g); ok && (v.(verdict).final || c.core.fresh(v.(verdict).at)) {
			return v.(verdict).yes, nil
		}
	}
	q, args := query(dialect.TableName{Schema: g.Schema, Name: g.Name})
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return false, checkQueryErr(ctx, g.String(), "the guard's "+what+" query failed", err)
	}
	yes := len(vals) == 1 && len(vals[0]) == 1 && vals[0][0] == "1"
	if !c.namesMoved {
		cache.Store(g, verdict{yes: yes, at: time.Now()})
	}
	return yes, nil
}

// verdict is a cached answer of tableVerdict and when it was asked: like the lazy
// check's, it is trusted for WithSchemaRecheck's interval only (a red-team pass: a
// user trigger added while a pool ran never made it choose MariaDB's stamped upsert).
// A final verdict (one the wrapper reached from a statement's failure, not from the
// catalog) is kept for the pool's life.
type verdict struct {
	yes, final bool
	at         time.Time
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
