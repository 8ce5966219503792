package etcdlock

import (
	"fmt"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The seed rule (red-team rt49e F1). A Backend with WithMinToken(n) prices its grants
// only under a seeded offset: one of at least n + seedBase (the clock at 2024-01-01, in
// microseconds). It seeds any lower offset — the floor key missing included — at the
// clock, in microseconds since 1970, plus n, by compare-and-swap on the floor key, only
// ever raising it (raiseOffsetTo), as redislock seeds a lost counter. A lower offset is
// what a prefix that lost its data shows: a prefix deleted in a live cluster, or a
// cluster rebuilt (quorum lost and re-bootstrapped, a wiped data dir, a new cluster from
// the same manifest), whose revision restarts at 1 — then also written again lower, by
// the same lockfloor -raise n repeated, by a process with a lower WithMinToken or none,
// by an earlier release (which put it back at n). Putting the offset back at n was
// enough for a live cluster (its revision never goes back) but not for a rebuilt one: n
// plus a small revision is below the tokens the lost cluster granted.
//
// Every token the lost cluster granted was offset + revision with the offset at most
// clock + n at its own seed (a raise above it must be matched by WithMinToken: give
// every process the raised value), and a cluster commits far fewer than one revision per
// microsecond (etcd commits some 10^4–10^5 writes a second), so a seed taken later is
// above them all — assuming the clocks of the service's processes agree to within the
// time the lost cluster lived (minus its revision count, in microseconds), and that
// every process runs WithMinToken(n) of this release (an earlier release puts a lost
// offset back at n, which this release seeds again, but its own grants in between are
// priced at n). A seeded offset (n + seedBase or more) is never seeded again: it stays
// in force until a loss. A service of an earlier release (offset n) is seeded once, at
// the first Open of this release: its tokens jump up, never back.
//
// etcd has no server clock a client can read, so the clock is the seeding process's own
// (time.Now); the floor key records the result, so every later grant of every process
// is priced by the recorded value, not by its own clock.

// seedBase is 2024-01-01T00:00:00Z in microseconds since 1970: an offset of at least
// WithMinToken + seedBase was seeded (or raised above any seed); a clock before it is
// no usable seed (one below it would be seeded again by every grant).
const seedBase = 1_704_067_200_000_000

// maxClockMicros bounds the clock accepted for a seed: beyond 2^53 µs (the year 2255)
// it is no usable seed.
const maxClockMicros = 1 << 53

// seeded reports whether off may price this Backend's grants: always without
// WithMinToken, else when off is at least WithMinToken + seedBase.
func (b *Backend) seeded(off uint64) bool {
	return b.cfg.minToken == 0 || off >= b.cfg.minToken+seedBase // minToken <= 2^62: no overflow
}

// seedOffset is the offset this Backend puts in force when it finds off (the floor
// key's offset, 0 when missing): off itself when seeded, else the clock in microseconds
// plus WithMinToken (the seed rule above), which is above off. A seed above 2^62
// (maxFloor: a WithMinToken within the clock of it) or a clock before seedBase or beyond
// maxClockMicros yields an error wrapping lockclient.ErrInvalidConfig: the grant fails
// rather than be priced below the tokens granted before a loss.
func (b *Backend) seedOffset(off uint64, now time.Time) (uint64, error) {
	if b.seeded(off) {
		return off, nil
	}
	us, ok := clockMicros(now)
	if !ok {
		return 0, fmt.Errorf("etcdlock: %w: the clock (%v) gives no usable token seed for the floor key %s (WithMinToken(%d))",
			lockclient.ErrInvalidConfig, now, b.FloorKey(), b.cfg.minToken)
	}
	seed := us + b.cfg.minToken // at most 2^53 + 2^62: no overflow
	if seed > maxFloor {
		return 0, fmt.Errorf("etcdlock: %w: the floor key %s holds offset %d, not seeded for WithMinToken(%d), "+
			"and the seed clock+WithMinToken = %d is above %d: no offset priced above the tokens granted before a loss fits; "+
			"lower WithMinToken to at most %d, raising the floor by hand (lockfloor -raise) above the highest token the database accepted",
			lockclient.ErrInvalidConfig, b.FloorKey(), off, b.cfg.minToken, seed, uint64(maxFloor), uint64(maxFloor)-uint64(us))
	}
	return seed, nil
}

// clockMicros is now in microseconds since 1970, ok false when it is no usable seed
// (before seedBase or beyond maxClockMicros).
func clockMicros(now time.Time) (uint64, bool) {
	us := now.UnixMicro()
	if us < seedBase || us > maxClockMicros {
		return 0, false
	}
	return uint64(us), true
}

// raiseSeed is the offset RaiseFloor(n) records on a prefix without floor key (a fresh
// prefix, or one that lost its data — a cluster rebuilt from scratch included): the
// clock in microseconds plus n, at most maxFloor (n itself when the clock is no
// usable seed), so the same lockfloor -raise repeated after a loss prices every later
// grant — of processes without WithMinToken too — above the tokens granted under an
// offset seeded (or raised) at n + an earlier clock before it (red-team rt49e F1). An
// existing floor key is raised to n itself (RaiseFloor). n 0 records nothing.
func raiseSeed(n uint64, now time.Time) uint64 {
	us, ok := clockMicros(now)
	if !ok || n == 0 {
		return n
	}
	return min(us+n, maxFloor) // n <= maxFloor: no overflow
}
