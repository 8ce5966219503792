package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// The primary check. Every script that writes — a grant, a renewal, a release, the
// queue's clean-ups (leave, abandon), the floor scripts (raise, last token, retire) —
// first makes sure that the server is the primary, in the same script, so at no extra
// round trip, and otherwise answers notPrimaryReply and writes nothing. A replica's
// keys lag the primary's, and what a script writes there never reaches the primary: a
// grant through a writable replica (replica-read-only no: a Sentinel-demoted old
// primary that kept the setting, a reader endpoint, a misrouted address) drew its
// token from the replica's copy of the counter and set the replica's copy of the lock,
// and the primary then granted the same lock, with the same token, to another holder
// (red-team rt48d F1); a LastToken read there answers below tokens the primary granted
// (rt37c F2).

// notPrimaryReply is the error reply of a script on a server that is not the primary
// (primaryLua's notprimaryreply and rolereply).
const notPrimaryReply = "redislock: the server is not the primary"

// unverifiedReply is the error reply of a script where INFO replication cannot be read
// (the account may not run INFO): the server is not known to be the primary. The
// caller then reads ROLE (runChecked).
const unverifiedReply = "redislock: cannot tell whether the server is the primary (INFO refused)"

// primaryLua starts every script that writes (and retiredScript). It selects the
// replication of scripts by their effects where Redis still has the choice (before
// Redis 5; since Redis 7 redis.replicate_commands is a deprecated no-op, called only
// if it still exists): the check reads INFO, which is not deterministic, before the
// script writes. notprimaryreply(counter, mode) is the check; a script runs it first,
// on the token counter, with the mode runChecked passes as its last argument:
//
//   - a PERSIST of the counter: a write, which a read-only replica refuses (READONLY)
//     before anything else runs; on the primary it changes nothing (the counter has
//     no expiry), and a PERSIST that changes nothing is not replicated;
//   - rolereply(mode): INFO replication's role, which tells a writable replica
//     ("role:slave"): notPrimaryReply. Where the account may not run INFO the answer is
//     unverifiedReply, unless mode is "role:master" (the caller read ROLE, which a
//     script cannot call) or "unverified" (neither may run: the script goes on).
//
// It returns that error reply, or nil when the script may go on. rolereply alone is for
// a script that writes nothing (retiredScript).
const primaryLua = `
if redis.replicate_commands then redis.replicate_commands() end
local notprimary = '` + notPrimaryReply + `'
local unverified = '` + unverifiedReply + `'
local function rolereply(mode)
  if mode == 'role:master' then return nil end
  local ok, info = pcall(redis.call, 'INFO', 'replication')
  local role = ok and type(info) == 'string' and string.match(info, 'role:(%a+)')
  if role then
    if role ~= 'master' then return redis.error_reply(notprimary) end
    return nil
  end
  if mode == 'unverified' then return nil end
  return redis.error_reply(unverified)
end
local function notprimaryreply(key, mode)
  redis.call('PERSIST', key)
  return rolereply(mode)
end
`

// How a Backend's scripts learn the server's role (Backend.roleSource): from INFO,
// inside the script, until the account is found not to be allowed INFO; then from
// ROLE, read before each script (one more round trip, for such accounts only); where
// ROLE is refused too, nowhere (the known-open writable replica behind an account that
// may run neither; a read-only replica is still refused by the PERSIST).
const (
	roleByINFO int32 = iota
	roleByROLE
	roleUnknown
)

// runChecked runs script (which starts with the primary check) with keys and args,
// plus the check's mode as its last argument, and returns its result. With an account
// that may run INFO that is one round trip. Where the script answers unverifiedReply,
// the Backend reads ROLE from then on (roleMode), and the script runs with
// "role:master" after ROLE answered so; a replica is an error wrapping
// lockclient.ErrUnavailable, nothing run. Where the account may run neither, strict
// (Retire) fails with ErrUnavailable naming the ACL to allow, and the other operations
// (grants, renewals, releases, LastToken, RaiseFloor — which WithMinToken runs at every
// Backend's first Open: a least-privilege account must still work) run "unverified",
// the script trying INFO again each time.
func (b *Backend) runChecked(ctx context.Context, op, key string, strict bool, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	src := b.roleSource.Load()
	if src == roleByINFO {
		cmd := script.Run(ctx, b.rdb, keys, append(args, "")...)
		if err := cmd.Err(); err == nil || !strings.Contains(err.Error(), unverifiedReply) {
			return cmd
		}
		b.roleSource.CompareAndSwap(roleByINFO, roleByROLE)
		src = roleByROLE
	}
	mode := "unverified"
	if src == roleByROLE || strict {
		var err error
		if mode, err = b.roleMode(ctx, op, key, strict); err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		if mode == "unverified" {
			b.roleSource.Store(roleUnknown)
		}
	}
	return script.Run(ctx, b.rdb, keys, append(args, mode)...)
}

// roleMode reads ROLE for runChecked: "role:master" when the server answers "master";
// an error wrapping lockclient.ErrUnavailable for a replica or an unreachable server;
// for a ROLE the account may not run either, "unverified" when not strict, else an
// error wrapping ErrUnavailable that says which ACL to allow (red-team rt38b F2).
func (b *Backend) roleMode(ctx context.Context, op, key string, strict bool) (string, error) {
	v, err := b.rdb.Do(ctx, "ROLE").Slice()
	if err != nil {
		var reply redis.Error
		if !errors.As(err, &reply) { // no answer: unreachable
			return "", unavailable(op, key, err)
		}
		if !strict {
			return "unverified", nil
		}
		return "", fmt.Errorf("redislock: %s: %w: cannot tell whether the Redis server is the primary: the account may run neither "+
			"INFO nor ROLE (%v); a Retire through a writable replica would retire nothing, so it is refused: "+
			"allow this account INFO (ACL +info) or ROLE (ACL +role), or retire with an account that may",
			op, lockclient.ErrUnavailable, err)
	}
	if len(v) == 0 || v[0] != "master" {
		role := "unknown"
		if len(v) > 0 {
			role = fmt.Sprint(v[0])
		}
		return "", notPrimaryError(op, key, fmt.Errorf("ROLE answers %q", role))
	}
	return "role:master", nil
}

// scriptFailed classifies the error of a script run by runChecked: runChecked's own
// verdict (ErrUnavailable); the answers of grantFailed (a counter at its end, no
// token, retired, the seed rule); a server that is not the primary (notPrimaryReply,
// or READONLY from a read-only replica) — an error wrapping lockclient.ErrUnavailable
// that says to use the primary; otherwise unavailability.
func (b *Backend) scriptFailed(op, key string, err error) error {
	if errors.Is(err, lockclient.ErrUnavailable) {
		return err
	}
	if e := b.grantFailed(op, key, err); e != nil {
		return e
	}
	if msg := err.Error(); strings.Contains(msg, notPrimaryReply) || strings.HasPrefix(msg, "READONLY") {
		return notPrimaryError(op, key, err)
	}
	return unavailable(op, key, err)
}

// notPrimaryError is the error of an operation refused because the server is not the
// primary (why: the script's reply, or ROLE's answer): it wraps
// lockclient.ErrUnavailable, as a failover may yet make the server the primary.
func notPrimaryError(op, key string, why error) error {
	err := fmt.Errorf("the Redis server is not the primary but a replica (%w): "+
		"its keys lag the primary's (the token counter may be below tokens the primary granted) and what is written there never "+
		"reaches the primary, so it grants, renews, releases, raises and retires nothing; use the primary's address", why)
	if key == "" {
		return fmt.Errorf("redislock: %s: %w: %w", op, lockclient.ErrUnavailable, err)
	}
	return backendutil.Unavailable("redislock", op, key, err)
}

// refusedByCheck reports whether err, a grant's error from runChecked, says for sure
// that the script granted nothing: runChecked's own refusal (ROLE answered a replica,
// or no answer: an error wrapping lockclient.ErrUnavailable, the script not run), or
// the primary check's (notPrimaryReply, unverifiedReply, READONLY: the check runs
// before the script writes). Such a request needs no abandonment.
func refusedByCheck(err error) bool {
	if errors.Is(err, lockclient.ErrUnavailable) {
		return true
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, notPrimaryReply) || strings.Contains(msg, unverifiedReply) || strings.HasPrefix(msg, "READONLY")
}
