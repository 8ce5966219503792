package lockclient

import (
	"errors"
	"fmt"
)

var (
	// ErrHeld means another owner holds the lock. It is a normal outcome of
	// [Client.TryAcquire]: back off and retry, or give up.
	ErrHeld = errors.New("lockclient: lock held by another owner")

	// ErrUnavailable means the lock service could not be reached or did not answer in
	// time. Nothing is known about who holds the lock. It is never returned for a lock
	// that is merely held by someone else.
	ErrUnavailable = errors.New("lockclient: lock service unavailable")

	// ErrLeaseLost means the lease can no longer be trusted: the service refused a
	// renewal, renewals failed until the local deadline, or the lease was released.
	// Writes made under its token may already be fenced by a newer holder.
	ErrLeaseLost = errors.New("lockclient: lease lost")

	// ErrNotOwner means the service does not hold the lock for this owner and token,
	// typically because the lease expired and the lock was granted to someone else.
	// The other holder's lock was left alone.
	ErrNotOwner = errors.New("lockclient: not the lock owner")

	// ErrClosed is returned by a Client after Close.
	ErrClosed = errors.New("lockclient: client closed")

	// ErrInvalidConfig means the lock client or its lock service is configured wrongly:
	// an invalid option value of New (a *ConfigError), an invalid option of a backend's
	// constructor, or a lock service set up so that the backend cannot work safely (a
	// missing sqllock lease table, a Redis eviction policy that could evict locks).
	// Invalid values are never silently replaced by defaults. Acquire and TryAcquire
	// return such an error at once, without retrying: it never wraps ErrUnavailable (no
	// retry can fix it) and is counted in the metrics with lock.outcome
	// "invalid_config". NewChecked returns the errors that can be known at
	// construction.
	ErrInvalidConfig = errors.New("lockclient: invalid configuration")
)

// ConfigError reports an invalid option value given to New or NewChecked: its text names
// the option and the value. It wraps ErrInvalidConfig.
type ConfigError struct {
	Option string // the option that carried the value, such as "WithRenewInterval"
	Msg    string // what is wrong with it
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("lockclient: invalid configuration: %s: %s", e.Option, e.Msg)
}

func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// errReleased is the reason a released lease reports through Err; it wraps ErrLeaseLost
// because a released lease must not be used for writes any more.
var errReleased = wrapLost("lease released")

type lostError struct {
	reason    string
	cause     error // the health check's answer, for unhealthy
	unhealthy bool
}

func (e *lostError) Error() string {
	if e.cause != nil {
		return "lockclient: lease lost: " + e.reason + ": " + e.cause.Error()
	}
	return "lockclient: lease lost: " + e.reason
}

func (e *lostError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrLeaseLost, e.cause}
	}
	return []error{ErrLeaseLost}
}

// ErrUnhealthy is wrapped by the Err of a lease that was lost because the health check
// of WithHealthCheck withheld its renewals until the local deadline.
var ErrUnhealthy = errors.New("lockclient: unhealthy")

func (e *lostError) Is(target error) bool { return target == ErrUnhealthy && e.unhealthy }

func wrapLost(reason string) error { return &lostError{reason: reason} }
