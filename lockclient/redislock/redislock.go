// Package redislock is a lockclient backend on a single Redis server
// (github.com/redis/go-redis/v9).
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379", MaxRetries: -1, ContextTimeoutEnabled: true})
//	locks := lockclient.New(redislock.New(rdb), lockclient.WithTTL(10*time.Second))
//
// # How a lock is kept
//
// A lock is the key <prefix>lock:<name>, whose value identifies the holder's session,
// the request and the fencing token, and whose expiry (PX, milliseconds, rounded up)
// is Redis's: expiry is judged by the server's clock only. Every operation is one Lua
// script, so it is atomic at the server:
//
//   - Grant: if the key does not exist, INCR the one token counter <prefix>token and SET
//     the key with PX ttl; the counter is only incremented when the grant succeeds, and
//     since scripts run one at a time, tokens are strictly increasing across all keys in
//     the order of grants. A key that exists is held ([lockclient.ErrHeld]), also when
//     the holder is the same session: locks are not re-entrant. (A retry of the very
//     same request whose reply was lost, such as go-redis's own retries, gets its token
//     back instead of ErrHeld.)
//   - Renew: PEXPIRE only if the stored value is the grant's; otherwise
//     [lockclient.ErrLeaseLost]. An expired key is gone, so it cannot be renewed.
//   - Release: DEL only if the stored value is the grant's; a key held by another
//     grant is left alone ([lockclient.ErrNotOwner]); a missing key means the grant
//     expired ([lockclient.ErrLeaseLost]).
//   - Network errors, timeouts, ended contexts and Redis errors wrap
//     [lockclient.ErrUnavailable], never ErrHeld.
//
// Wait polls PTTL of the key, sleeping a jittered interval (default 20–200ms) but never
// past the holder's remaining lease (plus a little jitter).
//
// # A single Redis is a single point — and failover can break mutual exclusion
//
// While the server is unreachable no lock is granted or renewed. Replication to a
// replica is asynchronous: if the primary fails after a grant and a replica is
// promoted, the replica may not have the grant, and a second client can be granted
// the same lock while the first still holds it. Worse, the token counter may not have
// the last increments either, so the new grant can even carry a token that was already
// issued. The fencing check in the database is what protects data from two holders,
// and it only works while tokens never go back: with Redis failover (Sentinel, managed
// "high availability", Cluster) that is not guaranteed. When it matters, use the
// sqllock backend (a table in a durable database) or etcdlock (consensus).
//
// Likewise keep the counter from being evicted or lost: use a maxmemory-policy of
// noeviction or a volatile-* policy (the counter has no expiry), and persistence (AOF
// with appendfsync always) if Redis restarts must not reset tokens to 1.
//
// Redis Cluster: the scripts touch two keys (the lock and the counter), which must be
// in one hash slot; give a prefix with a hash tag, e.g. WithPrefix("{fencedsql}:"), so
// that all locks of the service live on one primary.
//
// Configure the go-redis client so that an unreachable server surfaces in time:
// ContextTimeoutEnabled (lockclient's calls carry deadlines), short DialTimeout, and
// MaxRetries -1 or small (retries are safe, see above, but delay the answer; a retried
// Release whose first attempt went through reports ErrLeaseLost).
package redislock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// DefaultPrefix is the key prefix when WithPrefix is not given.
const DefaultPrefix = "fencedsql:"

// Defaults of WithPollInterval.
const (
	// DefaultPollMin is the shortest poll interval of Wait.
	DefaultPollMin = backendutil.DefaultPollMin
	// DefaultPollMax is the longest poll interval of Wait.
	DefaultPollMax = backendutil.DefaultPollMax
)

// Option configures New.
type Option func(*config)

type config struct {
	prefix           string
	pollMin, pollMax time.Duration
}

// WithPrefix sets the prefix of every key the backend uses (default DefaultPrefix):
// the locks are <prefix>lock:<name> and the token counter is <prefix>token. Clients
// that must exclude each other need the same prefix; different prefixes are separate
// lock services with separate token sequences.
func WithPrefix(prefix string) Option { return func(c *config) { c.prefix = prefix } }

// WithPollInterval sets the bounds of Wait's jittered poll interval (defaults 20ms and
// 200ms). A poll never sleeps past the holder's remaining lease (plus a little jitter).
func WithPollInterval(min, max time.Duration) Option {
	return func(c *config) { c.pollMin, c.pollMax = min, max }
}

// Backend is a lockclient.Backend on one Redis server. It is safe for concurrent use,
// and several lockclient.Clients may share it: each opens its own session.
type Backend struct {
	rdb     redis.UniversalClient
	prefix  string
	pollMin time.Duration
	pollMax time.Duration
}

var _ lockclient.Backend = (*Backend)(nil)

// New returns a Backend that keeps locks in the Redis server client talks to.
func New(client redis.UniversalClient, opts ...Option) *Backend {
	cfg := config{prefix: DefaultPrefix, pollMin: DefaultPollMin, pollMax: DefaultPollMax}
	for _, o := range opts {
		o(&cfg)
	}
	b := &Backend{rdb: client, prefix: cfg.prefix}
	b.pollMin, b.pollMax = backendutil.PollBounds(cfg.pollMin, cfg.pollMax)
	return b
}

// Prefix returns the key prefix.
func (b *Backend) Prefix() string { return b.prefix }

// LockKey returns the Redis key that holds the lock named name.
func (b *Backend) LockKey(name string) string { return b.prefix + "lock:" + name }

// TokenKey returns the Redis key of the token counter.
func (b *Backend) TokenKey() string { return b.prefix + "token" }

// Open implements lockclient.Backend. It does not talk to Redis: the session is a
// random id stored in the values of the locks it holds.
func (b *Backend) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("redislock: ttl must be positive, got %v", ttl)
	}
	id, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	ms := backendutil.CeilUnits(ttl, time.Millisecond)
	return &session{b: b, id: id, owner: backendutil.CleanOwner(owner), ttlMillis: ms}, nil
}

func randomHex(n int) (string, error) {
	buf := make([]byte, n)
	if _, err := crand.Read(buf); err != nil {
		return "", fmt.Errorf("redislock: random id: %w", err)
	}
	return hex.EncodeToString(buf), nil
}

// The value of a lock key is "<session>:<request>:<token>:<owner>"; session and
// request are hex, so the first three fields are unambiguous.

// grantScript: KEYS[1] lock, KEYS[2] counter; ARGV[1] "<session>:<request>:",
// ARGV[2] ttl in ms, ARGV[3] owner. Returns the token, or 0 when the key is held.
var grantScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  if string.sub(v, 1, #ARGV[1]) == ARGV[1] then
    local t = tonumber(string.match(v, '^(%d+):', #ARGV[1] + 1))
    if t then return t end
  end
  return 0
end
local t = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. string.format('%d', t) .. ':' .. ARGV[3], 'PX', ARGV[2])
return t
`)

// renewScript: KEYS[1] lock; ARGV[1] the grant's value, ARGV[2] ttl in ms.
// Returns 1 if renewed, 0 if the key is missing or someone else's.
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript: KEYS[1] lock; ARGV[1] the grant's value.
// Returns 1 if deleted, 0 if the key is missing, -1 if it is someone else's.
var releaseScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if v then return -1 end
return 0
`)

type session struct {
	b         *Backend
	id        string
	owner     string
	ttlMillis int64
}

func (s *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	req, err := randomHex(8)
	if err != nil {
		return lockclient.Grant{}, err
	}
	return s.tryAcquire(ctx, key, req)
}

// tryAcquire makes the grant request req (an id unique to this attempt).
func (s *session) tryAcquire(ctx context.Context, key, req string) (lockclient.Grant, error) {
	head := s.id + ":" + req + ":"
	tok, err := grantScript.Run(ctx, s.b.rdb, []string{s.b.LockKey(key), s.b.TokenKey()},
		head, s.ttlMillis, s.owner).Int64()
	switch {
	case err != nil:
		return lockclient.Grant{}, unavailable("try-acquire", key, err)
	case tok == 0:
		return lockclient.Grant{}, lockclient.ErrHeld
	case tok < 0:
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("invalid token %d", tok))
	}
	value := head + strconv.FormatInt(tok, 10) + ":" + s.owner
	return lockclient.Grant{Key: key, Token: uint64(tok), Data: value}, nil
}

func grantValue(g lockclient.Grant) (string, error) {
	v, ok := g.Data.(string)
	if !ok || v == "" {
		return "", fmt.Errorf("redislock: grant of %q (token %d) was not issued by redislock", g.Key, g.Token)
	}
	return v, nil
}

func (s *session) Renew(ctx context.Context, g lockclient.Grant) error {
	v, err := grantValue(g)
	if err != nil {
		return err
	}
	n, err := renewScript.Run(ctx, s.b.rdb, []string{s.b.LockKey(g.Key)}, v, s.ttlMillis).Int64()
	switch {
	case err != nil:
		return unavailable("renew", g.Key, err)
	case n == 1:
		return nil
	}
	return lockclient.ErrLeaseLost
}

func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	v, err := grantValue(g)
	if err != nil {
		return err
	}
	n, err := releaseScript.Run(ctx, s.b.rdb, []string{s.b.LockKey(g.Key)}, v).Int64()
	switch {
	case err != nil:
		return unavailable("release", g.Key, err)
	case n == 1:
		return nil
	case n == 0:
		return lockclient.ErrLeaseLost
	}
	return lockclient.ErrNotOwner
}

func (s *session) Wait(ctx context.Context, key string) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		pttl, err := s.b.rdb.PTTL(ctx, s.b.LockKey(key)).Result()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return unavailable("wait", key, err)
		case pttl == -2 || (pttl >= 0 && pttl < time.Millisecond):
			return nil // free, or expiring now
		}
		d := backendutil.PollDelay(s.b.pollMin, s.b.pollMax)
		if pttl > 0 {
			d = min(d, pttl+backendutil.AfterExpiry())
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close ends the session. Locks it still holds expire after their TTL (lockclient's
// Client releases its leases before closing the session).
func (s *session) Close(ctx context.Context) error { return nil }

func unavailable(op, key string, err error) error {
	if errors.Is(err, redis.Nil) {
		err = fmt.Errorf("unexpected nil reply: %w", err)
	}
	return backendutil.Unavailable("redislock", op, key, err)
}
