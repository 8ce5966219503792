package lockclient

import (
	"context"
	"time"
)

// CallerOnlyKey is implemented by the types of context keys whose values are meant for
// the caller's own statements only, and must not reach the calls a Client makes to its
// lock service on the caller's behalf (Acquire, TryAcquire and Lease.Release call the
// service with the caller's deadline, cancellation and other values, such as a tracing
// span, but without these). fencedsql's lease bindings (fencedsql.WithLease,
// WithLeases, WithToken) are such values: a backend whose statements go through a
// fenced pool (sqllock with the lease table in the fenced database) would otherwise
// have its grant refused under a context bound to a lost lease, and its release refused
// for the very lease it ends (red-team rt41c F4), leaving the key held for its TTL.
type CallerOnlyKey interface {
	// CallerOnly marks the key's type; it is never called.
	CallerOnly()
}

// serviceContext returns the context for a call of the lock service on behalf of ctx:
// ctx's deadline, cancellation and values, except the values under a CallerOnlyKey.
// context.WithoutCancel is not this: it keeps every value and drops the deadline.
func serviceContext(ctx context.Context) context.Context { return serviceCtx{ctx} }

// serviceCtx forwards everything of its parent but the values under a CallerOnlyKey.
type serviceCtx struct{ parent context.Context }

func (c serviceCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }
func (c serviceCtx) Done() <-chan struct{}       { return c.parent.Done() }
func (c serviceCtx) Err() error                  { return c.parent.Err() }
func (c serviceCtx) String() string              { return "lockclient.serviceContext" }

func (c serviceCtx) Value(key any) any {
	if _, callerOnly := key.(CallerOnlyKey); callerOnly {
		return nil
	}
	return c.parent.Value(key)
}
