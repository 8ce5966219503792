package redislock

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The token floor (lockclient.FloorRaiser): the floor is the token counter itself,
// <prefix>token, which the grant script INCRs. RaiseFloor sets it to min only if min is
// higher, in one script, so a raise is atomic against grants: a grant runs before it
// (and its token is below the new value) or after it (and its token is above min).
// A missing counter is first seeded by the seed rule (seedLua), as a grant would, so
// that a raise (or WithMinToken) after a loss does not restart tokens at min.

// raiseScript: KEYS[1] token counter, KEYS[2] the offset key; ARGV[1] min as a
// canonical decimal string; ARGV[2] the Backend's WithMinToken (offsetArg); ARGV[3] the
// primary check's mode (notPrimaryReply). Applies the seed rule (seedLua's adopt, strict
// when the Backend has WithMinToken), then sets the counter to min if min is higher
// (compared as decimal strings: Lua numbers are doubles), and returns the counter's value
// afterwards, as a string. On a service with an offset (a Backend's WithMinToken, or the
// offset key) a min above the clock plus that offset is refused (raiseAboveReply): a
// counter lost after such a raise would be seeded below the tokens granted since
// (red-team rt45d F1). A counter that holds no canonical non-negative integer is left
// alone and answered with corruptReply: a raise never reports success for a floor it did
// not put in force.
//
// It runs on the primary only (notPrimaryReply); a retired service is refused
// (retiredReply).
var raiseScript = redis.NewScript(seedLua + `
local np = notprimaryreply(KEYS[1], ARGV[3])
if np then return np end
local cur = redis.call('GET', KEYS[1])
if cur and isretired(cur) then return redis.error_reply(retired) end
if cur and not canon(cur) then return redis.error_reply(corrupt) end
local c, base = adopt(KEYS[1], KEYS[2], cur, ARGV[2], true, ARGV[2] ~= '0')
if not c then return base end
local min = ARGV[1]
if greater(min, c) then
  if base ~= '0' then
    local top, e = seedat(base)
    if not top then return e end
    if greater(min, top) then return redis.error_reply(raiseabove .. ' ' .. base) end
  end
  redis.call('SET', KEYS[1], min)
  c = min
end
return c
`)

// raiseAboveReply starts the error reply of a raise above the server's clock plus the
// service's offset, which follows it (raiseScript).
const raiseAboveReply = "redislock: the floor is above the clock plus the offset of the service"

// lastScript: KEYS[1] token counter, KEYS[2] the offset key; ARGV[1] the Backend's
// WithMinToken (offsetArg); ARGV[2] the primary check's mode (notPrimaryReply). Returns
// the counter's value, as a string, after the seed rule (seedLua's adopt, not strict): a
// missing counter is seeded as a grant of this Backend would seed it, at the clock plus
// the service's offset (red-team rt45d F1), and a WithMinToken above the recorded offset
// is adopted (F3). The answer is a token, or the mark of a retired service
// ("retired:<last token>"). It runs on the primary only (notPrimaryReply); a value that
// is no token is returned unchecked (LastToken parses it).
var lastScript = redis.NewScript(seedLua + `
local np = notprimaryreply(KEYS[1], ARGV[2])
if np then return np end
local cur = redis.call('GET', KEYS[1])
if cur and (isretired(cur) or not canon(cur)) then return cur end
local c, e = adopt(KEYS[1], KEYS[2], cur, ARGV[1], true, false)
if not c then return e end
return c
`)

// retiredScript: KEYS[1] token counter; ARGV[1] the primary check's mode (rolereply,
// notPrimaryReply without the PERSIST). Returns the counter's value, or "" when there
// is none; it writes nothing (a missing counter is not seeded: it is no retirement).
var retiredScript = redis.NewScript(seedLua + `
local np = rolereply(ARGV[1])
if np then return np end
local cur = redis.call('GET', KEYS[1])
if not cur then return '' end
return cur
`)

// retireScript: KEYS[1] token counter, KEYS[2] the offset key; ARGV[1] the Backend's
// WithMinToken (offsetArg); ARGV[2] "role:master" when the caller has just read ROLE's
// answer "master" from the server (Retire, where INFO is refused), else "". Replaces the
// counter's value v by the mark "retired:<last>", which every later grant and raise
// refuses, and returns last: the larger of v and the seed of the seed rule (seedLua: the
// server's clock plus the service's offset, the larger of ARGV[1] and the offset key),
// plus the retirement margin (lockclient.RetirementMargin), at most maxFloor — a bound
// of every token the service issued and of every token a process of the service could
// seed for 142 years should it lose the mark (red-team rt44c F2). A missing counter
// without an offset is lostReply, nothing written: the service may have been raised
// above the clock before the loss, so no number is known to bound its tokens (red-team
// rt45d F2). A counter already retired is left alone and its last token returned. It
// runs on a positively verified primary only: INFO replication must answer role:master
// — an INFO the account may not run is unverifiedReply, not "primary" (red-team rt38b
// F2) — unless ARGV[2] says ROLE did (Retire never passes "unverified"). A counter that
// holds no token is left alone (corruptReply).
var retireScript = redis.NewScript(seedLua + `
local np = notprimaryreply(KEYS[1], ARGV[2])
if np then return np end
local cur = redis.call('GET', KEYS[1])
if cur and isretired(cur) then return string.sub(cur, 9) end
if cur and not canon(cur) then return redis.error_reply(corrupt) end
local h = offsetof(KEYS[2])
if not h then return redis.error_reply(corrupt .. ' (the offset key)') end
if greater(ARGV[1], h) then h = ARGV[1] end
if not cur and h == '0' then return redis.error_reply(lost) end
local t = clock()
if not t then return redis.error_reply(noseed) end
local top = '` + strconv.FormatUint(maxFloor, 10) + `'
local base = add(t, h)
if greater(base, top) then base = top end
if cur and greater(cur, base) then base = cur end
local last = add(base, '` + strconv.FormatUint(lockclient.RetirementMargin, 10) + `')
if greater(last, top) then
  last = top
  if greater(base, top) then last = base end
end
redis.call('SET', KEYS[1], 'retired:' .. last)
return last
`)

var _ lockclient.FloorRaiser = (*Backend)(nil)

// maxFloor is the highest floor: the counter is a Redis integer (at most 2^63−1), and a
// grant must still be able to INCR it.
const maxFloor = math.MaxInt64 - 1

// WithMinToken raises the token floor to n (see RaiseFloor) when the Backend opens its
// first session, so that every token it grants is greater than n, and makes n the
// service's offset: a missing counter is seeded at the server's clock in microseconds
// plus n, and n is recorded under OffsetKey, so every token it grants is in fact above
// the clock plus n at the counter's seeding (the seed rule; see "Lost counters" in the
// package doc; red-team rt45d F1). Give every process of a service the same n, at least
// every value the service was raised to above the clock: a Backend whose n is below the
// recorded offset fails its Open and its grants with an error wrapping
// lockclient.ErrInvalidConfig. A failed raise fails that Open and is tried again by the
// next one. n above 2^63−2 is invalid (see New); n plus the clock must stay below 2^63−1
// (a seed above fails as a counter at its end). Given more than once, the highest n
// counts: floors only go up, so options assembled from defaults and overrides
// (WithMinToken(M), later WithMinToken(0)) never lower the offset (red-team rt62c).
func WithMinToken(n uint64) Option {
	return func(c *config) {
		if n > maxFloor {
			c.invalid("WithMinToken", "the floor must be at most %d (a Redis integer), got %d", uint64(maxFloor), n)
			return
		}
		c.minToken = max(c.minToken, n) // floors only go up
	}
}

// RaiseFloor implements lockclient.FloorRaiser: it sets the token counter <prefix>token
// to min if min is higher, atomically against grants, so every later token is greater
// than min. The floor lives in Redis, as durable as the counter (see the package doc on
// persistence and eviction). A min above 2^63−2 yields an error wrapping
// lockclient.ErrInvalidConfig; a retired service (Retire) one wrapping
// lockclient.ErrRetired; an unreachable server, or one that is not the primary (see
// LastToken), one wrapping ErrUnavailable.
func (b *Backend) RaiseFloor(ctx context.Context, min uint64) error {
	if b.cfgErr != nil {
		return b.cfgErr
	}
	if min > maxFloor {
		return fmt.Errorf("redislock: raise floor: %w: the floor must be at most %d (a Redis integer), got %d",
			lockclient.ErrInvalidConfig, uint64(maxFloor), min)
	}
	if _, err := b.runFloorScript(ctx, "raise floor", raiseScript, false, strconv.FormatUint(min, 10), b.offsetArg()); err != nil {
		return b.floorFailed("raise floor", err)
	}
	return nil
}

// LastToken implements lockclient.FloorRaiser: the value of the token counter, which is
// the last token granted or the floor when higher. A counter that does not exist (a
// new service, or one that lost its keys: a restart without persistence, a flush, an
// eviction) is seeded from the server's clock first, as the next grant or raise would
// seed it (see the package doc), and that value is returned: never 0 for a service
// whose holders may still carry clock-seeded tokens from before the loss. A retired
// service (Retire) answers its last token.
//
// The value is read from the primary only: on a replica (a Sentinel replica, a managed
// service's reader endpoint, a replica whose link is down) the counter may lag tokens
// the primary granted, and a floor raised from it would let them write again; LastToken
// then fails with an error wrapping lockclient.ErrUnavailable. The check is part of the
// script that reads the counter (notPrimaryReply): no extra round trip. RaiseFloor and
// Retire check the same.
func (b *Backend) LastToken(ctx context.Context) (uint64, error) {
	if b.cfgErr != nil {
		return 0, b.cfgErr
	}
	s, err := b.runFloorScript(ctx, "last token", lastScript, false, b.offsetArg())
	if err != nil {
		return 0, b.floorFailed("last token", err)
	}
	if v, ok := strings.CutPrefix(s, "retired:"); ok {
		s = v
	}
	return b.parseCounter("last token", s)
}

// Retire implements lockclient.Retirer: in one script on the primary, the token counter
// <prefix>token becomes the mark "retired:<last>", which every later grant refuses
// (an error wrapping lockclient.ErrRetired; a grant of an earlier release refuses it as
// a counter that holds no token), as does RaiseFloor, and last is returned: the larger
// of the counter and the server's clock in microseconds plus the service's offset
// (WithMinToken, OffsetKey), plus lockclient.RetirementMargin (2^52), at most 2^63−2 —
// every token granted before is below it, and so is every token a process of the
// service would seed for 142 years should it lose the mark. On a missing counter
// without an offset (neither WithMinToken nor OffsetKey: lockfloor -retire after a loss)
// it fails with an error wrapping lockclient.ErrUnavailable ("counter lost") and writes
// nothing: the service may have lain far above the clock, and no number is known to
// bound its tokens (red-team rt45d F2). A service already retired answers its last
// token again. On
// a replica it fails with an error wrapping lockclient.ErrUnavailable (see LastToken).
// A retired service is brought back only by hand (SET the counter to a token): switch
// to another prefix instead — or by losing the counter (a flush, a restart without
// persistence, an eviction): the next grant seeds it by the seed rule, below the returned
// bound, so below the service raised to it and the database floor raised from that
// (see lockclient.Retirer; red-team rt38b F1, rt44c F2).
//
// Unlike LastToken and RaiseFloor, Retire requires the server to be positively known as
// the primary: a Retire through a writable replica would mark only the replica's copy
// and report a retirement that retired nothing, while the primary keeps granting to
// stragglers. The script reads INFO replication; where the account may not run INFO, the
// role is read with ROLE (which a script cannot call: one more round trip, on this
// rare, non-hot path) and the script is run again with that answer. Where the account
// may run neither, Retire fails with an error wrapping lockclient.ErrUnavailable that
// says to allow INFO (ACL +info) or ROLE (+role) (red-team rt38b F2).
func (b *Backend) Retire(ctx context.Context) (uint64, error) {
	if b.cfgErr != nil {
		return 0, b.cfgErr
	}
	s, err := b.runFloorScript(ctx, "retire", retireScript, true, b.offsetArg())
	if err != nil {
		return 0, b.floorFailed("retire", err)
	}
	return b.parseCounter("retire", s)
}

var _ lockclient.RetirementReader = (*Backend)(nil)

// Retired implements lockclient.RetirementReader: whether the token counter holds the
// mark of a retired service ("retired:<last token>", Retire) and, if so, that last
// token. The script that reads it writes nothing — a missing counter is not seeded, as
// LastToken would — and checks the server's role as LastToken does (INFO replication,
// else ROLE): a replica, whose counter may lag a retirement, is an error wrapping
// lockclient.ErrUnavailable. A counter that holds neither a mark nor a token is an
// error wrapping lockclient.ErrInvalidConfig.
func (b *Backend) Retired(ctx context.Context) (uint64, bool, error) {
	if b.cfgErr != nil {
		return 0, false, b.cfgErr
	}
	s, err := b.runFloorScript(ctx, "retired", retiredScript, false)
	if err != nil {
		return 0, false, b.floorFailed("retired", err)
	}
	v, ok := strings.CutPrefix(s, "retired:")
	if !ok {
		if s != "" {
			if _, err := b.parseCounter("retired", s); err != nil {
				return 0, false, err
			}
		}
		return 0, false, nil
	}
	last, err := b.parseCounter("retired", v)
	if err != nil {
		return 0, false, err
	}
	return last, true, nil
}

// runFloorScript runs a floor script on the token counter and the offset key with
// args, through the primary check (runChecked), and returns its answer.
func (b *Backend) runFloorScript(ctx context.Context, op string, script *redis.Script, strict bool, args ...any) (string, error) {
	return b.runChecked(ctx, op, "", strict, script, []string{b.TokenKey(), b.OffsetKey()}, args...).Text()
}

var _ lockclient.Retirer = (*Backend)(nil)

// floorFailed classifies the error of a floor script (raise, last token, retire):
// scriptFailed's answers.
func (b *Backend) floorFailed(op string, err error) error { return b.scriptFailed(op, "", err) }

// parseCounter reads a token counter's value: a canonical non-negative integer up to
// 2^63−1, or an error wrapping lockclient.ErrInvalidConfig naming the counter.
func (b *Backend) parseCounter(op, s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > math.MaxInt64 || (s != "0" && strings.HasPrefix(s, "0")) {
		return 0, fmt.Errorf("redislock: %s: %w: the token counter %s holds %q, not a token; "+
			"set it (SET) above the highest token granted so far and above the highest token the guarded tables hold",
			op, lockclient.ErrInvalidConfig, b.TokenKey(), s)
	}
	return n, nil
}

// offsetArg is the Backend's WithMinToken as a decimal string, "0" without: the offset
// its scripts seed a missing counter with (the seed rule, seedLua).
func (b *Backend) offsetArg() string { return strconv.FormatUint(b.minToken, 10) }

// OffsetKey returns the Redis key that records the service's offset: the largest
// WithMinToken a Backend of the service applied (the seed rule, see the package doc).
func (b *Backend) OffsetKey() string { return b.prefix + "token-offset" }

// raiseMinToken applies WithMinToken once per Backend (again after a failure).
func (b *Backend) raiseMinToken(ctx context.Context) error {
	if b.minToken == 0 {
		return nil
	}
	b.floorMu.Lock()
	defer b.floorMu.Unlock()
	if b.floorRaised {
		return nil
	}
	if err := b.RaiseFloor(ctx, b.minToken); err != nil {
		return fmt.Errorf("redislock: WithMinToken(%d): %w", b.minToken, err)
	}
	b.floorRaised = true
	return nil
}
