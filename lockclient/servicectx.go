package lockclient

import (
	"context"
	"time"
)

// serviceContext returns a context for a call of the lock service on behalf of ctx: it
// has ctx's deadline and cancellation (Deadline, Done, Err) but none of its values. A
// caller's context may carry values meant for its own statements, above all a fencing
// lease bound by fencedsql.WithLease: Release ends the lease before it calls the
// service, and a backend whose statements go through a fenced pool (sqllock with the
// lease table in the fenced database) then had its DELETE refused for the lease it was
// releasing, and the key stayed held for its TTL (red-team rt41c F4).
// context.WithoutCancel is not this: it keeps the values and drops the deadline.
func serviceContext(ctx context.Context) context.Context { return valuelessCtx{ctx} }

// valuelessCtx forwards everything of its parent but Value.
type valuelessCtx struct{ parent context.Context }

func (c valuelessCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c valuelessCtx) Done() <-chan struct{}       { return c.parent.Done() }
func (c valuelessCtx) Err() error                  { return c.parent.Err() }
func (c valuelessCtx) Value(any) any               { return nil }
func (c valuelessCtx) String() string              { return "lockclient.serviceContext" }
