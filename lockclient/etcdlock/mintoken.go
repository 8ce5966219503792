package etcdlock

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/fencedsql/fencedsql/lockclient"
)

// WithMinToken sets the service's offset to at least n: the floor key's offset is
// raised to n (not to n minus the current revision) when the Backend opens its first
// session, and again by any grant that finds it below n (grantOffset), so every token the
// Backend grants is greater than n + the revision. Tokens are the offset plus the
// revision, which never goes back, so after the prefix lost its data (the floor key with
// it) the offset is put back at n — by the next grant of a Backend already open, or by
// the first Open of one started afterwards — and every later grant is priced above every
// token issued before the loss, as long as no offset above n was ever written (every
// process of the service has the same WithMinToken, at least the value the service was
// raised to at its switch). A failed raise fails that Open (or grant) and is tried again
// by the next. n above 2^62 is invalid (see New) (red-team rt45d F1, rt46d F1).
func WithMinToken(n uint64) Option {
	return func(c *config) {
		if n > maxFloor {
			c.invalid("WithMinToken", "the floor must be at most %d, got %d", uint64(maxFloor), n)
			return
		}
		c.minToken = n
	}
}

// raiseMinToken applies WithMinToken once per Backend (again after a failure); grants
// put it back themselves should the offset fall below it later (restoreMinToken).
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

// restoreMinToken raises the floor key's offset to WithMinToken's value if it is lower
// or missing (raiseOffset): at a Backend's first Open, and after a grant refused by
// grantOffset (isLowOffset).
func (b *Backend) restoreMinToken(ctx context.Context) error {
	if err := b.raiseOffset(ctx, b.cfg.minToken); err != nil {
		return fmt.Errorf("etcdlock: WithMinToken(%d): %w", b.cfg.minToken, err)
	}
	return nil
}

// lowOffsetError is grantOffset's refusal of a grant made under an offset below the
// Backend's WithMinToken. It wraps lockclient.ErrUnavailable: the grant is given back,
// the offset raised again (restoreMinToken), and the grant retried.
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
	return fmt.Sprintf("etcdlock: %v: the floor key %s %s, below this Backend's WithMinToken(%d): the prefix lost its data "+
		"(or a process configured with a lower WithMinToken, or none, wrote it after the loss); a token priced under it could go back below "+
		"the tokens granted before, so the grant is given back and the offset raised to %d again. If this persists, "+
		"check that nothing keeps deleting or lowering %s; do not lower it by hand",
		lockclient.ErrUnavailable, e.key, found, e.minToken, e.minToken, e.key)
}

func (e *lowOffsetError) Unwrap() error { return lockclient.ErrUnavailable }

// grantOffset is parseOffset for a grant. An offset below the Backend's WithMinToken — a
// missing floor key included — means the prefix lost its data (a wiped prefix, a restore
// from before the raise), after which the key may have been written again lower (a
// process configured with a lower WithMinToken, or none, a RaiseFloor of an earlier
// release that wrote min − revision): a token priced under it could go back below the
// tokens this service issued before. The grant is refused with a *lowOffsetError
// (wrapping lockclient.ErrUnavailable, isLowOffset); the caller gives it back, puts
// the offset back at WithMinToken (restoreMinToken), as the first Open of a restarted
// process would, and tries again (red-team rt45d F1: the missing key; rt46d F1: a key written
// again lower, which was accepted).
func (b *Backend) grantOffset(kv *mvccpb.KeyValue) (uint64, error) {
	off, err := b.parseOffset(kv)
	if err != nil {
		return 0, err
	}
	if off < b.cfg.minToken {
		return 0, &lowOffsetError{key: b.FloorKey(), off: off, missing: kv == nil, minToken: b.cfg.minToken}
	}
	return off, nil
}

// isLowOffset reports whether err is grantOffset's refusal of an offset below
// WithMinToken: the caller gives the grant back, puts the offset back
// (restoreMinToken) and tries again.
func isLowOffset(err error) bool {
	var low *lowOffsetError
	return errors.As(err, &low)
}
