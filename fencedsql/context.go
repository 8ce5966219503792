package fencedsql

import "context"

// Lease is what WithLease binds: a fencing token and a way to learn the lease was lost.
// *lockclient.Lease implements it.
type Lease interface {
	Token() uint64
	Lost() <-chan struct{}
	Err() error
}

type ctxKey int

const (
	leaseKey ctxKey = iota
	versionKey
)

type binding struct {
	token uint64
	lease Lease // nil for WithToken
}

// WithLease returns a context that carries lease's fencing token. A transaction begun
// with it is bound to that token, and Commit refuses (rolling back) once the lease is
// lost. A statement outside a transaction takes the token from its own context.
func WithLease(ctx context.Context, lease Lease) context.Context {
	if lease == nil {
		return context.WithValue(ctx, leaseKey, binding{})
	}
	return context.WithValue(ctx, leaseKey, binding{token: lease.Token(), lease: lease})
}

// WithToken returns a context that carries a bare fencing token (for tokens obtained
// some other way, such as a job carrying its scheduler's token). Token 0 is no token.
func WithToken(ctx context.Context, token uint64) context.Context {
	return context.WithValue(ctx, leaseKey, binding{token: token})
}

// TokenFrom returns the token carried by ctx, if any.
func TokenFrom(ctx context.Context) (uint64, bool) {
	b, ok := ctx.Value(leaseKey).(binding)
	return b.token, ok && b.token != 0
}

func bindingFrom(ctx context.Context) (binding, bool) {
	b, ok := ctx.Value(leaseKey).(binding)
	return b, ok
}

// ExpectVersion returns a context under which a guarded UPDATE or DELETE (and the update
// part of an upsert) succeeds only if every targeted row's version column is still v,
// the value the business code read. Otherwise the statement fails with
// ErrVersionConflict and changes nothing; the check is inside the same statement as the
// token check. It has no effect on a plain INSERT.
func ExpectVersion(ctx context.Context, v int64) context.Context {
	return context.WithValue(ctx, versionKey, v)
}

func expectedVersion(ctx context.Context) (int64, bool) {
	v, ok := ctx.Value(versionKey).(int64)
	return v, ok
}
