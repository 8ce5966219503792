package lockclient

import (
	"context"
	"errors"
	"fmt"
)

// ErrRetired is wrapped by the error of every grant, and of every RaiseFloor, of a lock
// service that was retired (Retirer.Retire, lockfloor -retire): the application moved
// to another lock service, and a process still configured for this one (a straggler of
// a rolling deploy, a cron job) must not be granted a token, which the guarded
// database's floor — raised once, at the switch — could not refuse while this service
// kept counting (red-team rt37c F4). It wraps ErrInvalidConfig, so Acquire and
// TryAcquire return it at once, without retrying: the fix is the process's
// configuration (the new service), not a retry.
var ErrRetired = fmt.Errorf("lockclient: the lock service was retired (the application moved to another lock service): %w", ErrInvalidConfig)

// Retirer is implemented by lock services that can be retired for good: the last step
// of moving an application to another lock service (README, "Switching or rebuilding
// the lock service"). memlock, etcdlock and redislock implement it.
type Retirer interface {
	// Retire makes the service refuse every grant that takes effect after Retire
	// returns, for every client (an error wrapping ErrRetired), and every RaiseFloor,
	// and returns last: every token the service issued before is at most last. The mark
	// is kept where the grants read their token (the Redis counter, the etcd floor key),
	// so a grant checks it in its own round trip, and a process of an earlier release
	// refuses it too (it is no token). LastToken keeps answering last afterwards, and
	// Retire again changes nothing and answers last again. A retired service is not
	// brought back: to switch back, switch to a fresh one (another prefix) by the same
	// procedure. An unreachable service, or a server that is not the primary, yields an
	// error wrapping ErrUnavailable.
	Retire(ctx context.Context) (last uint64, err error)
}

// ErrNoRetire is returned by Client.Retire when the backend does not implement Retirer.
// It wraps errors.ErrUnsupported.
var ErrNoRetire = fmt.Errorf("lockclient: the lock service cannot be retired: %w", errors.ErrUnsupported)

// Retire retires the Client's lock service (see Retirer) and returns the last token it
// issued. It returns ErrNoRetire when the backend cannot. The Client's own later grants
// fail with ErrRetired like everyone's.
func (c *Client) Retire(ctx context.Context) (uint64, error) {
	r, ok := c.backend.(Retirer)
	if !ok {
		return 0, ErrNoRetire
	}
	return r.Retire(ctx)
}
