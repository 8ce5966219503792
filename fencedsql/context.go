package fencedsql

import (
	"context"
	"reflect"
	"slices"
)

// Lease is what WithLease and WithLeases bind: a fencing token and a way to learn the lease was lost.
// *lockclient.Lease implements it. A Lease that also implements
// lockclient.ServiceIdentifier (*lockclient.Lease does) names the lock service its token
// comes from, and leases naming two services are not bound together (see WithLeases).
type Lease interface {
	Token() uint64
	Lost() <-chan struct{}
	Err() error
}

type ctxKey int

// CallerOnly marks fencedsql's context keys as lockclient.CallerOnlyKey: a lease or
// version bound to a context is for the caller's statements, and a lock client called
// with that context (Acquire, Release) leaves it out of its calls to the lock service,
// whose statements may go through a fenced pool too.
func (ctxKey) CallerOnly() {}

const (
	leaseKey ctxKey = iota
	versionKey
)

type binding struct {
	token  uint64
	leases []Lease // nil for a bare WithToken
	// leaseTok is the largest token of leases (0 for none), read when they were bound:
	// the only token the binding may raise a transaction to (otherBinding). It differs
	// from token where WithToken replaced the leases' token.
	leaseTok uint64
	// noToken: a lease bound was nil or never granted (token 0), or none was given:
	// the binding carries no usable token (token 0), whatever the others carry; the
	// other leases are still checked.
	noToken bool
	// service is the lock service the leases come from, as far as they name it
	// (leaseService): the first known identity, "" when none is known.
	service string
	// mixed is the refusal of leases of two lock services bound together (their
	// identities both known and different), nil otherwise: BeginTx and every statement
	// under the binding return it (checkLease).
	mixed error
	// proof, when a lease carries a token below token (leases of different tokens, or
	// a larger token laid over them: WithToken), remembers that those leases were
	// confirmed held at their lock service after token came into existence
	// (leaseproof.go): BeginTx and the statements under the binding confirm them first.
	proof *leaseProof
}

// leased reports whether b carries leases, or the mark of a lease missing (noToken):
// made by WithLease or WithLeases, or by WithToken over such a binding.
func (b binding) leased() bool { return len(b.leases) > 0 || b.noToken }

// WithLease returns a context that carries lease's fencing token: WithLeases with one
// lease. A transaction begun with it is bound to that token, and every statement and
// Commit refuse once the lease is lost. A statement outside a transaction takes the
// token from its own context. On a context that already carries leases, lease joins
// them (see WithLeases).
func WithLease(ctx context.Context, lease Lease) context.Context {
	return WithLeases(ctx, lease)
}

// WithLeases returns a context for work done under several locks at once, such as a
// transfer between two accounts, each under its own lock. It carries the largest of
// the leases' tokens, read now; a transaction begun with it is bound to that token.
// Every statement and Commit under it (the transaction's, or the statement's own
// context's outside one) is refused before anything is sent, with an error wrapping
// lockclient.ErrLeaseLost, once any one of the leases is lost (Lost closed or Err not
// nil).
//
// No leases, or a nil one among them (also a nil *lockclient.Lease, what Acquire
// returns beside an error), or one never granted (its Token is 0: a zero-value
// lockclient.Lease, whose other methods are then not called), carries no usable token:
// guarded writes and claims (SELECT … FOR UPDATE) fail with ErrNoToken, in a
// transaction begun under it whatever the statements' own contexts carry. The other
// leases are kept and checked: once one of them is lost, BeginTx and every statement
// refuse with ErrLeaseLost.
//
// Nesting joins. On a context that already carries leases (WithLease, WithLeases), the
// leases given join them: WithLease(WithLease(ctx, a), b) is WithLeases(ctx, a, b),
// as a statement's lease joins the transaction it runs in. Code that takes lock A,
// binds it and calls a function that takes lock B and binds it on the context it was
// given thus keeps A checked. A bare token (WithToken) in ctx is replaced: it carries
// no lease to check. In a loop that takes a new lease per round, derive each round's
// context from one without the previous lease (jobCtx := WithLease(ctx, lease), not
// ctx = WithLease(ctx, lease)): a released lease kept in the binding is lost, and
// refuses every statement with ErrLeaseLost.
//
// Why the largest token. A row records the token that last wrote it, and the database
// refuses a token smaller than that. A row last written under lock B carries a token
// of B; a row written under lock A, one of A. Tokens come from one counter per lock
// service, so the largest token held is at least every token that any earlier holder
// of either lock was given: it orders after every earlier holder of each lock, and the
// rows of both locks accept it. A smaller one would be refused by a row the other lock
// last wrote with a larger token, although the writer holds that lock.
//
// What is protected, and what is not. The largest token orders after every earlier
// holder of a lock only if the lock service still held that lock's lease when the
// largest token was granted: a lease the service expired, revoked or dropped while its
// client has not noticed (a pause the client cannot see, the service's clock ahead, an
// operator's forced unlock, a failover that lost the key) may have been granted again
// with a token below the largest, and the rows its new holder wrote would accept the
// larger token. So before the binding's token is first used — at BeginTx, or at the
// first statement under it outside a transaction — every lease whose token is below
// the largest must be confirmed held by its lock service after the largest lease was
// granted (LeaseConfirmer, which *lockclient.Lease implements: a renewal the service
// accepted that was sent after that grant, else one renewal now, a round trip per such
// lease, once per binding; none for a single lease or leases of one token). Otherwise
// BeginTx or the statement fails with an error wrapping lockclient.ErrLeaseLost, before
// anything is sent. A statement's lease joining a transaction confirms the
// transaction's leases again against the token the transaction carries (the largest
// lease's, or a bare token's: WithToken) before the statement is sent. A lease that does not implement LeaseConfirmer, bound beside a larger token, is
// refused with an error wrapping ErrUnsupported (nothing else shows its lock had no
// other holder). After that, mutual exclusion per lock comes from the database (any
// later holder of a lock has a larger token) and from the lease checks: every statement
// and the Commit check all the leases, locally (no round trip), and refuse once any is
// lost. A lease lost after COMMIT was sent cannot be taken back: that transaction
// commits, as it would under one lock.
// The leases must come from one lock service (tokens of two services do not compare):
// leases that name two different services (lockclient.ServiceIdentifier: every
// *lockclient.Lease does) make BeginTx and every statement under the context fail with
// a *LeaseServicesError (ErrLeaseServicesDiffer) before anything is sent. A lease that
// does not name its service (another Lease implementation, a test's fake) is accepted
// beside any other, unchecked.
// Take the locks in a fixed order (by key) so that two transfers do not wait for each
// other forever.
//
// What it costs afterwards. The rows of lock A now carry B's larger token: a later
// write to them under WithLease(a) alone — A still held, nobody else in between — is
// refused with ErrFenced, as a smaller token always is. Keep writing A's rows under
// WithLeases(a, b) while the transfer's locks are held; once B is released, acquire A
// again (a new, larger token) before writing its rows alone.
func WithLeases(ctx context.Context, leases ...Lease) context.Context {
	var b binding
	if outer, ok := bindingFrom(ctx); ok && outer.leased() {
		b.leases, b.noToken = slices.Clone(outer.leases), outer.noToken
	}
	b.noToken = b.noToken || len(leases) == 0
	for _, l := range leases {
		if isNilLease(l) || l.Token() == 0 {
			b.noToken = true // not a lease held: nothing to check, no token to carry
			continue
		}
		if !hasLease(b.leases, l) {
			b.leases = append(b.leases, l)
		}
	}
	for _, l := range b.leases {
		b.leaseTok = max(b.leaseTok, l.Token())
	}
	b.service, b.mixed = leaseServices(b.leases)
	if !b.noToken {
		b.token = b.leaseTok
	}
	if needsProof(b.leases, b.token) {
		b.proof = &leaseProof{}
	}
	// Clipped: a transaction begun under b appends the leases joining it to its own
	// copy, never into b's array, which every transaction begun under ctx shares.
	b.leases = slices.Clip(b.leases)
	return context.WithValue(ctx, leaseKey, b)
}

// isNilLease reports whether l is nil, or a nil pointer in a Lease (what
// lockclient.Client.Acquire returns beside an error): neither carries a token, and
// their methods may not be called.
func isNilLease(l Lease) bool {
	if l == nil {
		return true
	}
	v := reflect.ValueOf(l)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// WithToken returns a context that carries a bare fencing token (for tokens obtained
// some other way, such as a job carrying its scheduler's token). Token 0 is no token:
// a transaction begun under it refuses its guarded writes and claims with ErrNoToken.
// On a context that carries leases (WithLease, WithLeases) the token replaces theirs,
// but the leases stay bound and checked (forgetting them would let work go on after
// one is lost), and a binding with no usable token keeps none. Inside a transaction
// bound to another token, such a statement raises the transaction only to its leases'
// largest token, and a token above both that and the transaction's is refused as a
// bare token is (ErrUnsupported): no lease held was granted it (see BeginTx).
//
// A bare token above a lease's token — laid over the lease here, or a transaction begun
// under WithToken that a statement's lease joins — writes that lease's rows with the
// larger token only once the lease was confirmed held at its lock service since now
// (LeaseConfirmer, one renewal round trip per binding, or per transaction whose token
// rose): otherwise BeginTx or the statement fails with an error wrapping
// lockclient.ErrLeaseLost, or ErrUnsupported for a lease that cannot confirm, nothing
// sent (see WithLeases, "What is protected"; red-team rt46e F1). A token equal to or
// below the leases' costs nothing.
func WithToken(ctx context.Context, token uint64) context.Context {
	b := binding{token: token}
	if outer, ok := bindingFrom(ctx); ok && outer.leased() {
		b.leases, b.noToken, b.leaseTok = outer.leases, outer.noToken, outer.leaseTok // clipped by WithLeases
		b.service, b.mixed = outer.service, outer.mixed
		if b.noToken {
			b.token = 0
		}
		switch {
		case b.token == outer.token:
			b.proof = outer.proof // the same token over the same leases: one proof
		case needsProof(b.leases, b.token):
			// A token laid over leases above one of theirs: each such lease confirmed
			// held at its service since now, once per binding (red-team rt46e F1).
			b.proof = &leaseProof{}
		}
	}
	return context.WithValue(ctx, leaseKey, b)
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
