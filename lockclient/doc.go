// Package lockclient is a distributed lock client built on leases and fencing tokens.
//
// A lock is granted as a [Lease]: it expires unless renewed, and it carries a fencing
// token, a number issued by the lock service that is strictly greater than the token of
// every earlier grant of that service, whatever the key. The holder passes the token to
// the storage it writes (see package fencedsql), and the storage refuses a write whose
// token is older than the newest one it has seen. The lease keeps the lock recoverable
// when a holder dies; the token keeps data safe when a holder only pauses.
//
// # Guarantees
//
//   - Expiry is decided by the lock service on its own clock. The client's clock may only
//     make it give up earlier: a watchdog renews each held lease at a fraction of the TTL,
//     and if renewals keep failing the client declares the lease lost at
//     (send time of the last successful renewal + TTL − safety margin), measured on the
//     monotonic clock, which is never later than the moment the service can expire it,
//     and on the wall clock, whichever comes first (the monotonic clock does not count
//     the time a machine is suspended).
//   - A renewal the service refuses closes [Lease.Lost] at once with [ErrLeaseLost]. A
//     lease declared lost at its local deadline, or because the service refused the
//     renewal of the session lease its grant hangs on, is also released in the
//     background (owner-checked), so that its key does not stay blocked when the
//     application never calls Release.
//   - [Lease.Release] is owner- and token-checked by the service: a holder whose lease
//     expired cannot release the next holder's lock.
//   - [ErrHeld] (someone else holds the lock: back off and retry) is never confused with
//     [ErrUnavailable] (the lock service cannot be reached: degrade or fail fast).
//   - A token that goes back is not handed out, as far as one Client can see it: the
//     Client remembers the highest token it was granted per lock name (for at most 1,024
//     names) and refuses a later grant of that name whose token is not above it — the
//     service's token source went back (restored from an older snapshot, reset, its
//     floor deleted). The grant is released (owner-checked) and Acquire or TryAcquire
//     returns an error wrapping [ErrInvalidConfig] naming both tokens; the fix is to
//     raise the service's token floor ([FloorRaiser]). This detects a regression only
//     within one Client's lifetime and for the names it remembers: a new process after
//     a restore is not protected by it, and the floor procedure stays necessary.
//
// A lease is not an exclusive grant: between the service's "yes" and a write reaching the
// database the holder can be paused past the TTL. Only the fencing token checked by the
// storage closes that window. Keep the critical section small and do slow work (network
// calls, computation) before taking the lock.
//
// # Configuration errors
//
// A configuration the client cannot honour is an error wrapping [ErrInvalidConfig],
// never a default silently put in its place and never [ErrUnavailable]: no retry can fix
// it. [New] keeps the signature New(b, opts...) *Client and does not fail: it records an
// invalid option value (a *[ConfigError] naming the option and the value), a nil
// Backend, or the error of a backend constructor that has no error result (a backend
// implementing [ConfigChecker]: etcdlock.New, redislock.New, memlock.New), and every Acquire and
// TryAcquire of that Client returns it at once. [NewChecked] returns the same error at
// construction:
//
//	locks, err := lockclient.NewChecked(backend, lockclient.WithTTL(ttl))
//	if err != nil { // errors.Is(err, lockclient.ErrInvalidConfig)
//		return fmt.Errorf("lock client: %w", err)
//	}
//
// Neither contacts the lock service. A service that answers that it is set up wrongly
// (a missing sqllock lease table, a Redis that may evict locks) ends Acquire and
// TryAcquire at once with an error wrapping ErrInvalidConfig; such outcomes are counted
// with lock.outcome "invalid_config". sqllock's Backend.CheckTable finds a missing lease
// table at start-up.
//
// # Logging
//
// The package logs only through the logger given with [WithLogger] (default: discard),
// never through slog's default logger or package log; backends take a logger of their
// own (sqllock.WithLogger, redislock.WithLogger), discarded by default too.
//
// Lock services implement [Backend]; the in-process one is package memlock, others live in
// the sibling packages (etcdlock, sqllock, redislock).
package lockclient
