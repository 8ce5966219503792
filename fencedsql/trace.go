package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Tracing. fencedsql starts no spans of its own: it composes with the database/sql
// instrumentation people already run (github.com/XSAM/otelsql, in either order — see
// the README's "Tracing" section). For every guarded statement it adds one event,
// EventFencedWrite, to the span active in the statement's context: otelsql's statement
// span when otelsql wraps the fenced driver, else the caller's own span (a transaction
// span, a request span). The event carries the table, the token the statement carried
// and the outcome, so a fenced rejection is visible on the trace where it happened.

// EventFencedWrite is the name of the span event added for each guarded statement.
const EventFencedWrite = "fencedsql.guarded_write"

// Attribute keys of the span event (db.collection.name is AttrDBTable) and of the
// MetricGuardedWriteDuration histogram (fencedsql.outcome).
const (
	AttrToken     = attribute.Key("fencedsql.token")
	AttrOutcome   = attribute.Key("fencedsql.outcome")
	AttrOperation = attribute.Key("db.operation.name")
)

// Outcomes of a guarded statement, the values of AttrOutcome.
const (
	OutcomeAccepted        = "accepted"         // the database accepted the fenced statement
	OutcomeFenced          = "fenced"           // refused: a newer token wrote a targeted row (ErrFenced)
	OutcomeVersionConflict = "version_conflict" // ErrVersionConflict
	OutcomeNoToken         = "no_token"         // refused before sending: ErrNoToken
	OutcomeUnsupported     = "unsupported"      // refused before sending: ErrUnsupported
	OutcomeSchema          = "schema"           // refused before sending: ErrSchema
	OutcomeDuplicate       = "duplicate"        // a unique constraint refused it: ErrDuplicate
	OutcomeError           = "error"            // any other error (connection, syntax, …)
)

// outcomes lists the outcomes in the order of their index (outcomeIndex).
var outcomes = [...]string{OutcomeAccepted, OutcomeFenced, OutcomeVersionConflict, OutcomeNoToken,
	OutcomeUnsupported, OutcomeSchema, OutcomeDuplicate, OutcomeError}

func outcomeIndex(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrFenced):
		return 1
	case errors.Is(err, ErrVersionConflict):
		return 2
	case errors.Is(err, ErrNoToken):
		return 3
	case errors.Is(err, ErrUnsupported):
		return 4
	case errors.Is(err, ErrSchema):
		return 5
	case errors.Is(err, ErrDuplicate):
		return 6
	}
	return 7
}

// guardedExec runs a guarded plan through execPlan and records its outcome (duration
// histogram, span event).
func (c *conn) guardedExec(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	if p.Kind == plan.KindClaim && !c.hasToken(ctx) {
		return c.execPlan(ctx, r, p, args) // a plain locking read: nothing fenced
	}
	tok, start := c.tokenOf(ctx), time.Now()
	res, err := c.execPlan(ctx, r, p, args)
	c.core.observe(ctx, p, tok, start, err)
	return res, err
}

// guardedQuery runs a guarded plan through queryPlan. The span event is added when
// the statement returns (otelsql's statement span ends then); the histogram records the
// statement when its rows close, since PostgreSQL may report the fencing failure after
// the first rows — such a late failure adds a second event, if the span still records.
func (c *conn) guardedQuery(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error) {
	observed := p.Kind != plan.KindClaim || c.hasToken(ctx)
	tok, start := c.tokenOf(ctx), time.Now()
	rs, err := c.queryPlan(ctx, r, p, args)
	if err != nil {
		if observed {
			c.core.observe(ctx, p, tok, start, err)
		}
		return nil, err
	}
	w, ok := rs.(*rows)
	if !ok { // a claimed read returns the driver's rows: map their errors too
		w = newRows(rs, c.core, nil, 0, 0).(*rows)
	}
	if observed {
		c.core.event(ctx, p, tok, nil)
		w.onDone(func(err error) {
			c.core.metrics.writeDuration(p.Guard, outcomeIndex(err), time.Since(start).Seconds())
			if err != nil {
				c.core.event(ctx, p, tok, err)
			}
		})
	}
	return w, nil
}

// observe records a guarded statement's duration and outcome, and adds the event to
// the active span.
func (k *core) observe(ctx context.Context, p *plan.Plan, tok uint64, start time.Time, err error) {
	k.metrics.writeDuration(p.Guard, outcomeIndex(err), time.Since(start).Seconds())
	k.event(ctx, p, tok, err)
}

// event adds EventFencedWrite to the span active in ctx, when it is recording.
func (k *core) event(ctx context.Context, p *plan.Plan, tok uint64, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{
		AttrDBTable.String(p.Guard.String()),
		AttrOperation.String(p.Kind.String()),
		AttrToken.Int64(int64(tok)), //nolint:gosec // tokens above MaxInt64 are refused (NoTokenError)
		AttrOutcome.String(outcomes[outcomeIndex(err)]),
	}
	span.AddEvent(EventFencedWrite, trace.WithAttributes(attrs...))
}
