package lockclient

import (
	"context"
	"time"
)

// Backend is a lock service. Implementations live in the sub-packages (memlock,
// etcdlock, sqllock, redislock); users may write their own and check it with the
// conformance suite in package locktest.
type Backend interface {
	// Open starts a session: the identity of one Client at the service. owner is a
	// human-readable name for logs and diagnostics; the backend must distinguish two
	// sessions even when their owners are equal. ttl is the lease time-to-live the
	// service applies to every grant and renewal of this session.
	// An unreachable service yields an error wrapping ErrUnavailable.
	Open(ctx context.Context, owner string, ttl time.Duration) (Session, error)
}

// Session is one client's connection to a lock service. Its methods are called
// concurrently. Errors follow one convention so that the Client can act on them:
//   - ErrHeld: the key is held by another session (TryAcquire only);
//   - ErrLeaseLost or ErrNotOwner: the service no longer holds the grant for this
//     session and token (Renew, Release);
//   - anything else, which should wrap ErrUnavailable: the outcome is unknown, the
//     service could not be reached or ctx ended first.
type Session interface {
	// TryAcquire makes one attempt to take key. On success the grant's token is strictly
	// greater than every token the service issued before, for any key.
	// The grant expires ttl after the service received the request unless renewed.
	// A key already held by this same session is reported as ErrHeld (locks are not
	// re-entrant).
	TryAcquire(ctx context.Context, key string) (Grant, error)

	// Wait blocks until the holder of key may have changed (release or expiry) or ctx
	// ends, returning ctx.Err() then. Spurious returns are allowed: the caller retries
	// TryAcquire. A backend without notifications sleeps for a bounded, jittered
	// poll interval.
	Wait(ctx context.Context, key string) error

	// Renew extends g by the session's ttl, measured by the service from when it
	// receives the request. It must refuse (ErrLeaseLost) a grant that already
	// expired, even if nobody took the key since.
	Renew(ctx context.Context, g Grant) error

	// Release frees g if and only if the service still holds it for this session with
	// g's token; otherwise it changes nothing and returns ErrNotOwner (or ErrLeaseLost
	// when the grant expired and was not granted again).
	Release(ctx context.Context, g Grant) error

	// Close ends the session. Grants still held expire by their ttl or are released,
	// as the backend documents.
	Close(ctx context.Context) error
}

// Grant is what a Session hands out for one successful TryAcquire.
type Grant struct {
	Key   string
	Token uint64
	// Data is backend-private state that Renew and Release need (a revision, a row id).
	Data any
}

// SessionRenewer is implemented by sessions whose grants all hang on one session-level
// lease at the service (etcd: one lease, one keep-alive for any number of locks). The
// Client then renews the session once per interval instead of each grant: RenewSession
// extends every grant of the session by its ttl, measured by the service from when it
// receives the request, and Renew is not called. ErrLeaseLost means the session lease is
// gone, and with it every grant; any other error is treated as transient.
//
// Such a backend must still give every new grant a full ttl from the TryAcquire request
// (renewing the shared lease as part of the grant), because the Client trusts a grant
// until send time + ttl − margin. After ErrLeaseLost the Client does not reopen the
// session: the backend obtains a new session lease on the next TryAcquire itself.
type SessionRenewer interface {
	RenewSession(ctx context.Context) error
}

// QueueSession is implemented by sessions that serve the waiters of a key in order of
// arrival (G12 in docs/design.md). When the Client's session implements it, Acquire
// calls AcquireQueued instead of looping over TryAcquire and Wait.
//
// AcquireQueued takes key, joining the key's queue at the service if the key is held
// (or other waiters are queued) and returning once this waiter has been granted the key.
// Grants are made in queue order, each one when the previous holder released or expired;
// the grant's token is drawn when the grant takes effect, so tokens stay strictly
// increasing in grant order across all keys. sent is the local time at which the request
// that made the grant was sent (the grant expires ttl after the service received it),
// never later than the truth.
//
// When ctx ends first, AcquireQueued returns an error wrapping ctx.Err(); when the
// service cannot be reached, one wrapping ErrUnavailable (the Client retries with
// backoff, re-joining the queue at its end). On any error the waiter leaves the queue at
// once, so it never delays those behind it, and a grant that landed after the caller
// gave up is released (owner-checked) without waiting for its TTL. ErrHeld is never
// returned.
type QueueSession interface {
	Session
	AcquireQueued(ctx context.Context, key string) (g Grant, sent time.Time, err error)
}

// ConfigChecker is implemented by backends whose constructor cannot return an error (its
// signature has none) and records an invalid option value instead, such as etcdlock.New
// and redislock.New. CheckConfig returns that error, wrapping ErrInvalidConfig, or nil;
// it must not contact the service. New and NewChecked call it, so that the Client's
// Acquire and TryAcquire fail at once (and NewChecked returns the error); the backend's
// Open returns the same error for Clients of other packages.
type ConfigChecker interface {
	CheckConfig() error
}
