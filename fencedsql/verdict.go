package fencedsql

import (
	"context"
	"sync"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// tableVerdict answers a dialect's yes-or-no question about a guarded table (the
// query returns one row holding 1 for yes): asked on the connection once per pool and
// table and kept in cache, or asked every time on a connection whose name resolution
// may have moved (the answer is then this connection's only). A failed query is a
// *SchemaError naming what was asked.
func (c *conn) tableVerdict(ctx context.Context, cache *sync.Map, g *plan.Table, what string, query func(dialect.TableName) (string, []any)) (bool, error) {
	if !c.namesMoved {
		if v, ok := cache.Load(g); ok {
			return v.(bool), nil
		}
	}
	q, args := query(dialect.TableName{Schema: g.Schema, Name: g.Name})
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return false, &SchemaError{Table: g.String(), Problem: "the guard's " + what + " query failed" + mockHint, Err: err}
	}
	yes := len(vals) == 1 && len(vals[0]) == 1 && vals[0][0] == "1"
	if !c.namesMoved {
		cache.Store(g, yes)
	}
	return yes, nil
}
