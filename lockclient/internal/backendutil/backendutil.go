// Package backendutil holds the small pieces the lock backends sqllock and redislock
// share: owner names, the errors of an unknown outcome, the TTL sent to the server, and
// Wait's poll intervals.
package backendutil

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/lockclient"
)

// MaxOwnerLen bounds the owner name a backend stores for diagnostics.
const MaxOwnerLen = 200

// Defaults of the backends' WithPollInterval.
const (
	DefaultPollMin = 20 * time.Millisecond
	DefaultPollMax = 200 * time.Millisecond
)

// CleanOwner makes owner valid UTF-8 (invalid bytes become '?') and cuts it to at most
// MaxOwnerLen bytes on a rune boundary.
func CleanOwner(owner string) string {
	owner = strings.ToValidUTF8(owner, "?")
	if len(owner) > MaxOwnerLen {
		cut := MaxOwnerLen
		for cut > 0 && !utf8.RuneStart(owner[cut]) {
			cut--
		}
		owner = owner[:cut]
	}
	return owner
}

// Unavailable wraps err, an error whose outcome is unknown, for operation op on key of
// backend pkg: it wraps lockclient.ErrUnavailable and err.
func Unavailable(pkg, op, key string, err error) error {
	return fmt.Errorf("%s: %s %q: %w: %w", pkg, op, key, lockclient.ErrUnavailable, err)
}

// CeilUnits is ttl in whole units, rounded up: the server's expiry may only be later
// than the client assumes.
func CeilUnits(ttl, unit time.Duration) int64 {
	return int64((ttl + unit - 1) / unit)
}

// PollBounds returns the poll interval bounds a backend uses for the given ones:
// DefaultPollMin for a minimum that is not positive, and at least the minimum as the
// maximum.
func PollBounds(min, max time.Duration) (time.Duration, time.Duration) {
	if min <= 0 {
		min = DefaultPollMin
	}
	if max < min {
		max = min
	}
	return min, max
}

// PollDelay is a poll interval drawn uniformly from [min, max].
func PollDelay(min, max time.Duration) time.Duration {
	return min + rand.N(max-min+1)
}

// AfterExpiry is the slack a waiter adds to the holder's remaining lease, so that it
// re-checks just after the server's expiry, not just before it; the jitter spreads the
// waiters of one key.
func AfterExpiry() time.Duration {
	return time.Millisecond + rand.N(5*time.Millisecond)
}
