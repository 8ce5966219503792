package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/fencedsql/fencedsql/lockclient"
)

// WithMinToken sets the service's offset to at least n: when the Backend opens its
// first session, and whenever a grant finds the floor key's offset below n + seedBase
// (grantOffset) — the key missing included: the prefix or the cluster lost its data, or
// the offset was written again lower after a loss, or by an earlier release — the
// offset is seeded at the clock in microseconds plus n (the seed rule, seed.go). So
// every token the Backend grants is greater than n + the revision, and a grant after a
// loss is above every token granted before it: after a prefix deleted in a live cluster
// as after a cluster rebuilt from scratch, whose revision restarts at 1 (red-team rt49e
// F1), as long as no offset above n + clock was ever written (every process of the
// service has the same WithMinToken, at least the value the service was raised to at its
// switch). A seeded offset is left alone. A failed raise fails that Open (or grant) and
// is tried again by the next. n above 2^62 is invalid (see New), and so is a seed
// above 2^62 (n within the clock of it; seedOffset) (red-team rt45d F1, rt46d F1).
// Given more than once, the highest n counts: floors only go up, so options assembled
// from defaults and overrides (WithMinToken(M), later WithMinToken(0)) never lower the
// offset (red-team rt62c).
func WithMinToken(n uint64) Option {
	return func(c *config) {
		if n > maxFloor {
			c.invalid("WithMinToken", "the floor must be at most %d, got %d", uint64(maxFloor), n)
			return
		}
		c.minToken = max(c.minToken, n) // floors only go up
	}
}

// raiseMinToken applies WithMinToken once per Backend (again after a failure); grants
// seed the offset again themselves should it fall below the seeded range later
// (restoreMinToken).
func (b *Backend) raiseMinToken(ctx context.Context) error {
	if b.cfg.minToken == 0 {
		return nil
	}
	b.floorMu.Lock()
	defer b.floorMu.Unlock()
	if b.floorRaised {
		return nil
	}
	if err := b.restoreMinToken(ctx); err != nil {
		return err
	}
	b.floorRaised = true
	return nil
}

// restoreMinToken seeds the floor key's offset at the clock plus WithMinToken's value if
// it is below that value or missing (seedOffset, raiseOffsetTo): at a Backend's first
// Open, and after a grant refused by grantOffset (isLowOffset).
func (b *Backend) restoreMinToken(ctx context.Context) error {
	seed := func(off uint64, _ bool) (uint64, error) { return b.seedOffset(off, time.Now()) }
	if err := b.raiseOffsetTo(ctx, seed); err != nil {
		return fmt.Errorf("etcdlock: WithMinToken(%d): %w", b.cfg.minToken, err)
	}
	return nil
}

// lowOffsetError is grantOffset's refusal of a grant made under an offset below the
// Backend's WithMinToken. It wraps lockclient.ErrUnavailable: the grant is given back,
// the offset seeded again (restoreMinToken), and the grant retried.
type lowOffsetError struct {
	key      string // the floor key
	off      uint64 // the offset found (0 when missing)
	missing  bool   // the floor key did not exist
	minToken uint64
}

func (e *lowOffsetError) Error() string {
	found := fmt.Sprintf("holds offset %d", e.off)
	if e.missing {
		found = "is missing"
	}
	return fmt.Sprintf("etcdlock: %v: the floor key %s %s, not seeded for this Backend's WithMinToken(%d) (seed.go): the prefix or the cluster "+
		"lost its data (or a process configured with a lower WithMinToken, or none, or of an earlier release, wrote it); a token priced under it could go back below "+
		"the tokens granted before, so the grant is given back and the offset seeded at the clock plus %d. If this persists, "+
		"check that nothing keeps deleting or lowering %s; do not lower it by hand",
		lockclient.ErrUnavailable, e.key, found, e.minToken, e.minToken, e.key)
}

func (e *lowOffsetError) Unwrap() error { return lockclient.ErrUnavailable }

// grantOffset is parseOffset for a grant. An offset not seeded for the Backend's
// WithMinToken (seeded: at least WithMinToken + seedBase) — a missing floor key included —
// means the prefix or the cluster lost its data (a wiped prefix, a rebuilt cluster, a
// restore from before the raise), after which the key may have been written again lower
// (a process configured with a lower WithMinToken, or none, or of an earlier release, the
// same lockfloor -raise repeated), or an earlier release's offset: a token priced under
// it could go back below the tokens this service issued before (red-team rt49e F1). The grant is refused with a *lowOffsetError
// (wrapping lockclient.ErrUnavailable, isLowOffset); the caller gives it back, seeds
// the offset at the clock plus WithMinToken (restoreMinToken), as the first Open of a
// restarted process would, and tries again (red-team rt45d F1: the missing key; rt46d F1: a key written
// again lower, which was accepted).
func (b *Backend) grantOffset(kv *mvccpb.KeyValue) (uint64, error) {
	off, err := b.parseOffset(kv)
	if err != nil {
		return 0, err
	}
	if !b.seeded(off) {
		return 0, &lowOffsetError{key: b.FloorKey(), off: off, missing: kv == nil, minToken: b.cfg.minToken}
	}
	return off, nil
}

// isLowOffset reports whether err is grantOffset's refusal of an offset below
// WithMinToken: the caller gives the grant back, seeds the offset again
// (restoreMinToken) and tries again.
func isLowOffset(err error) bool {
	var low *lowOffsetError
	return errors.As(err, &low)
}
