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
// the lock service"). memlock, etcdlock, redislock and sqllock implement it.
type Retirer interface {
	// Retire makes the service refuse every grant that takes effect after Retire
	// returns, for every client (an error wrapping ErrRetired), and every RaiseFloor,
	// and returns last: every token the service issued before is at most last. The mark
	// is kept where the grants read their token (the Redis counter, the etcd floor key),
	// so a grant checks it in its own round trip, and a process of an earlier release
	// refuses it too (it is no token). LastToken keeps answering last afterwards, and
	// Retire again changes nothing and answers last again. A retired service is not
	// brought back: to switch back, switch to a fresh one (another prefix) by the same
	// procedure. An unreachable service, or a server that is not the primary (or not
	// known to be), yields an error wrapping ErrUnavailable.
	//
	// last may be above the service's actual last token: etcdlock and redislock add
	// RetirementMargin, so that the service stays below last should it lose the mark.
	//
	// The mark lives in the service's own data: when that data is lost (a Redis flush,
	// a restart without persistence, an eviction; the etcd prefix deleted, or a restore
	// from before Retire), the service comes back as a fresh one that grants again —
	// below last (RetirementMargin), so below the floor the switch procedure raised
	// from it, whose guards refuse its holders' writes (red-team rt44c F2; before, a
	// revived Redis or busy etcd granted above last, rt38b F1). Retirement bridges the
	// time until every process configured for the service is stopped or reconfigured;
	// it does not replace that (README, "Switching or rebuilding the lock service").
	Retire(ctx context.Context) (last uint64, err error)
}

// RetirementMargin is what etcdlock's and redislock's Retire add to the last token they
// answer: 2^52 (in Redis's clock-seeded microseconds, 142 years; in etcd revisions, more
// writes than a cluster makes). Those two services come back high when the data that
// holds their retirement mark is lost — a Redis counter lost to a flush, a restart
// without persistence or an eviction is seeded again from the server's clock, far
// above its last token; a wiped etcd prefix grants the cluster's revision again,
// which other writers of a shared cluster moved on — while the service that replaced
// them, raised only to the last token, counts one per grant. Raised above last plus
// the margin (the switch procedure raises it to Retire's answer), the new service's
// tokens, and the database floor raised from them, stay above every token such a
// revived service grants, so a straggler's writes are refused by the floor instead of
// fencing out the new service's holders (red-team rt44c F2). Each switch away from
// etcd or Redis uses 2^52 of the 2^63 tokens: about 2000 switches. memlock and sqllock
// come back low (a restart, a restore, a recreated table start below the floor) and add
// nothing.
const RetirementMargin uint64 = 1 << 52

// ErrNoRetire is returned by Client.Retire when the backend does not implement Retirer.
// It wraps errors.ErrUnsupported.
var ErrNoRetire = fmt.Errorf("lockclient: the lock service cannot be retired: %w", errors.ErrUnsupported)

// Retire retires the Client's lock service (see Retirer) and returns the last token it
// issued. It returns ErrNoRetire when the backend cannot. The Client's own later grants
// fail with ErrRetired like everyone's.
//
// Like LastToken, it never answers below a token this Client was granted: the switch
// procedure raises the new service and the database floor from the answer, so an answer
// below a live lease's token would let that lease write. Before retiring, it reads the
// service's LastToken (when the backend is a FloorRaiser) and, when that is below a
// token the Client remembers granting, fails with LastToken's error (wrapping
// ErrInvalidConfig) without marking the service; the answer of Retire itself is checked
// the same way (red-team rt38b F3). The service's floor has to be raised first.
func (c *Client) Retire(ctx context.Context) (uint64, error) {
	r, ok := c.backend.(Retirer)
	if !ok {
		return 0, ErrNoRetire
	}
	if _, ok := c.backend.(FloorRaiser); ok {
		if _, err := c.LastToken(ctx); err != nil {
			return 0, fmt.Errorf("lockclient: retire: %w", err)
		}
	}
	last, err := r.Retire(ctx)
	if err != nil {
		return 0, err
	}
	if err := c.behindError("retire", last); err != nil {
		return 0, err
	}
	return last, nil
}

// RetirementReader is implemented by lock services that can tell whether they were
// retired (Retirer.Retire) without changing anything: memlock, etcdlock, redislock and
// sqllock implement it. The failover hook asks it before raising the guarded database's
// floor from the service's LastToken (lockfloor -show -live): a hook still configured
// for a service the application has moved away from would otherwise raise the floor
// from the retired service's last token, below every token of the service in use, and
// report success (red-team rt42c F6).
type RetirementReader interface {
	// Retired reports whether the service was retired and, if so, its last token — the
	// value Retire and LastToken answer, a bound of every token it issued. When the
	// service was not retired, it answers (0, false, nil). It is a read: it writes
	// nothing (a missing Redis counter is not seeded, unlike LastToken) and needs no
	// right beyond those LastToken needs. Like LastToken it reads the primary: a
	// server that is known not to be one (a standby, a replica, whose copy may lag a
	// retirement) yields an error wrapping ErrUnavailable, as does an unreachable
	// service. A retirement whose mark was lost with the service's data (see Retirer)
	// is no retirement: the service answers false, as the fresh service it became.
	Retired(ctx context.Context) (last uint64, retired bool, err error)
}
