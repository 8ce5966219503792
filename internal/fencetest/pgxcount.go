package fencetest

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// PgxCounter is a pgx.QueryTracer (set it as a pgx.ConnConfig's Tracer) that counts the
// statements pgx sends whose text contains Substr. A batch's statements are not
// counted (it is not a pgx.BatchTracer).
type PgxCounter struct {
	Substr string
	n      atomic.Int64
}

// N returns how many statements were counted.
func (c *PgxCounter) N() int64 { return c.n.Load() }

// TraceQueryStart implements pgx.QueryTracer.
func (c *PgxCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, c.Substr) {
		c.n.Add(1)
	}
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *PgxCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
