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
//   - Grant: if the key does not exist and no live waiter is queued ahead of the caller,
//     INCR the one token counter <prefix>token and SET the key with PX ttl; the counter
//     is only incremented when the grant succeeds, and since scripts run one at a time,
//     tokens are strictly increasing across all keys in the order of grants. A key that
//     exists is held ([lockclient.ErrHeld]), also when the holder is the same session:
//     locks are not re-entrant. (A retry of the very same request whose reply was lost,
//     such as go-redis's own retries, gets its token back instead of ErrHeld.)
//   - Tokens are exact integers end to end: the script reads the counter back with GET
//     after INCR and handles it as a decimal string (Lua numbers are doubles, exact only
//     up to 2^53), and the client parses it as a uint64. The counter is a Redis integer
//     (at most 2^63−1).
//   - Renew: PEXPIRE only if the stored value is the grant's; otherwise
//     [lockclient.ErrLeaseLost]. An expired key is gone, so it cannot be renewed.
//   - Release: DEL only if the stored value is the grant's; a key held by another
//     grant is left alone ([lockclient.ErrNotOwner]); a missing key means the grant
//     expired ([lockclient.ErrLeaseLost]).
//   - Network errors, timeouts, ended contexts and Redis errors wrap
//     [lockclient.ErrUnavailable], never ErrHeld.
//
// # Waiting: a FIFO queue, polled
//
// Sessions implement [lockclient.QueueSession]: Acquire joins the key's queue, the sorted
// set <prefix>queue:<name> scored by a ticket from the counter <prefix>ticket; each
// waiter keeps a liveness key <prefix>waiter:<id> (PX ttl) that it refreshes at every
// poll, so that a crashed waiter is skipped once its liveness key expires. The grant
// script only grants a free key to the first live waiter, and TryAcquire does not barge
// in ahead of queued waiters. Waiters poll — one script per poll that tries the grant and
// refreshes the liveness key — the first one every 1–2 poll minimums (default 20–40ms,
// never sleeping past the holder's remaining lease), and so do the next two in line;
// the others poll every half to one poll maximum (default 100–200ms). A release wakes
// nobody: the first waiter sees it at its next poll, and the others never race for the
// key. A waiter whose context ends leaves the queue at
// once (ZREM); if that fails, its entry is skipped after its liveness key expires.
//
// What it promises: waiters of one key are granted in arrival order (the order of their
// first poll at the server); a handoff takes up to one short poll interval; a waiter
// that died holds up those behind it for at most one TTL. The lock keys, the queue and
// the liveness keys of one lock name must live on one node (see Redis Cluster below).
//
// # Abandoned attempts
//
// A grant request whose outcome is unknown (timeout, cut connection, ended context) may
// still reach Redis later. The session then marks the request abandoned: a script
// deletes the lock if that request got it (owner-checked by session and request id) and
// otherwise sets <prefix>abandoned:<session>:<request> (PX ttl), which the grant script
// checks, so that a late-arriving request grants nothing. Abandonment is retried in the
// background (with backoff, for up to one TTL) until Redis answers; Close waits for it.
//
// Wait (used only by clients that do not queue) polls PTTL of the key, sleeping a
// jittered interval (default 20–200ms) but never past the holder's remaining lease.
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
// # Eviction: only noeviction is safe
//
// Under memory pressure Redis evicts keys according to maxmemory-policy. The lock keys
// carry an expiry, so every volatile-* policy may evict a held lock and let a second
// client be granted it while the first still trusts its lease; allkeys-* policies may
// also evict the token counter and restart tokens at 1. Only noeviction is safe: Redis
// then refuses writes when full (grants and renewals fail with ErrUnavailable, and held
// leases are declared lost at their local deadline). Open checks the policy with
// CONFIG GET maxmemory-policy, once per Backend, and refuses (an error wrapping
// [ErrEvictionPolicy]) any other policy unless [WithAllowEviction] is given, in which
// case it logs a warning; where CONFIG is not allowed (managed services rename or
// forbid it) it logs a warning through slog's default logger and goes on. Use
// persistence (AOF with appendfsync always) too, if a Redis restart must not reset
// tokens to 1.
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
	"log/slog"
	"strconv"
	"strings"
	"sync"
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
	allowEviction    bool
}

// ErrEvictionPolicy is wrapped by the error of Open when Redis's maxmemory-policy is not
// noeviction: Redis could evict a held lock (or the token counter) under memory
// pressure. The error also wraps lockclient.ErrInvalidConfig, so that Acquire reports
// it at once instead of retrying.
var ErrEvictionPolicy = errors.New("redislock: unsafe maxmemory-policy: only noeviction keeps locks from being evicted")

// WithAllowEviction makes Open accept a maxmemory-policy other than noeviction, logging a
// warning instead of failing. Mutual exclusion then depends on Redis never running out
// of memory.
func WithAllowEviction() Option { return func(c *config) { c.allowEviction = true } }

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
	rdb           redis.UniversalClient
	prefix        string
	pollMin       time.Duration
	pollMax       time.Duration
	allowEviction bool

	policyMu      sync.Mutex
	policyChecked bool
}

var _ lockclient.Backend = (*Backend)(nil)

// New returns a Backend that keeps locks in the Redis server client talks to.
func New(client redis.UniversalClient, opts ...Option) *Backend {
	cfg := config{prefix: DefaultPrefix, pollMin: DefaultPollMin, pollMax: DefaultPollMax}
	for _, o := range opts {
		o(&cfg)
	}
	b := &Backend{rdb: client, prefix: cfg.prefix, allowEviction: cfg.allowEviction}
	b.pollMin, b.pollMax = backendutil.PollBounds(cfg.pollMin, cfg.pollMax)
	return b
}

// Prefix returns the key prefix.
func (b *Backend) Prefix() string { return b.prefix }

// LockKey returns the Redis key that holds the lock named name.
func (b *Backend) LockKey(name string) string { return b.prefix + "lock:" + name }

// TokenKey returns the Redis key of the token counter.
func (b *Backend) TokenKey() string { return b.prefix + "token" }

// Open implements lockclient.Backend. The session is a random id stored in the values
// of the locks it holds; the first Open of a Backend checks Redis's maxmemory-policy (see
// the package doc).
func (b *Backend) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("redislock: ttl must be positive, got %v", ttl)
	}
	if err := b.checkPolicy(ctx); err != nil {
		return nil, err
	}
	id, err := randomHex(16)
	if err != nil {
		return nil, err
	}
	ms := backendutil.CeilUnits(ttl, time.Millisecond)
	bg, stop := context.WithCancel(context.Background())
	return &session{b: b, id: id, owner: backendutil.CleanOwner(owner), ttlMillis: ms, bg: bg, stop: stop}, nil
}

// checkPolicy checks maxmemory-policy once per Backend (again after an unreachable
// server).
func (b *Backend) checkPolicy(ctx context.Context) error {
	b.policyMu.Lock()
	defer b.policyMu.Unlock()
	if b.policyChecked {
		return nil
	}
	res, err := b.rdb.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		var rerr redis.Error
		if !errors.As(err, &rerr) {
			return unavailable("open", "", fmt.Errorf("CONFIG GET maxmemory-policy: %w", err))
		}
		// CONFIG is forbidden or renamed (managed Redis): say so, loudly, and go on.
		slog.Warn("redislock: cannot check Redis's maxmemory-policy; make sure it is noeviction, or Redis may evict held locks under memory pressure",
			"err", err)
		b.policyChecked = true
		return nil
	}
	policy, ok := res["maxmemory-policy"]
	switch {
	case !ok:
		slog.Warn("redislock: Redis did not report maxmemory-policy; make sure it is noeviction, or Redis may evict held locks under memory pressure")
	case policy == "noeviction":
	case b.allowEviction:
		slog.Warn("redislock: Redis's maxmemory-policy is not noeviction: under memory pressure Redis may evict held locks and grant them twice",
			"maxmemory-policy", policy)
	default:
		return fmt.Errorf("%w (Redis has %q; set maxmemory-policy noeviction, or accept the risk with WithAllowEviction): %w",
			ErrEvictionPolicy, policy, lockclient.ErrInvalidConfig)
	}
	b.policyChecked = true
	return nil
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

// grantScript: KEYS[1] lock, KEYS[2] token counter, KEYS[3] queue, KEYS[4] the
// request's abandonment mark, KEYS[5] ticket counter; ARGV[1] "<session>:<request>:",
// ARGV[2] ttl in ms, ARGV[3] owner, ARGV[4] waiter id ("" for TryAcquire), ARGV[5] the
// liveness key prefix. Returns {1, token} (the token as a decimal string: never a Lua
// number, which is a double) when granted; {0, pttl, rank} when the key is held;
// {-1, pttl, rank} when a live waiter is first in the queue (rank: the waiter's position
// in the queue, 0 first). A waiter that is not granted is queued (once) and its liveness
// key refreshed.
var grantScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  if string.sub(v, 1, #ARGV[1]) == ARGV[1] then
    local t = string.match(v, '^(%d+):', #ARGV[1] + 1)
    if t then return {1, t} end
  end
end
if redis.call('EXISTS', KEYS[4]) == 1 then return {0, -1} end
local function wait(code)
  if ARGV[4] ~= '' then
    if not redis.call('ZSCORE', KEYS[3], ARGV[4]) then
      redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[5]), ARGV[4])
    end
    redis.call('SET', ARGV[5] .. ARGV[4], '1', 'PX', ARGV[2])
    return {code, redis.call('PTTL', KEYS[1]), redis.call('ZRANK', KEYS[3], ARGV[4])}
  end
  return {code, redis.call('PTTL', KEYS[1]), 0}
end
if v then return wait(0) end
while true do
  local h = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if not h then break end
  if h == ARGV[4] then break end
  if redis.call('EXISTS', ARGV[5] .. h) == 1 then return wait(-1) end
  redis.call('ZREM', KEYS[3], h)
end
redis.call('INCR', KEYS[2])
local t = redis.call('GET', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. t .. ':' .. ARGV[3], 'PX', ARGV[2])
if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[4])
  redis.call('DEL', ARGV[5] .. ARGV[4])
end
return {1, t}
`)

// abandonScript: KEYS[1] lock, KEYS[2] the request's abandonment mark, KEYS[3] queue;
// ARGV[1] "<session>:<request>:", ARGV[2] ttl in ms, ARGV[3] waiter id or "", ARGV[4]
// the liveness key prefix. Deletes the lock if the request got it (returns 1), else marks
// the request abandoned so that it grants nothing if it arrives later (returns 0); the
// waiter leaves the queue either way.
var abandonScript = redis.NewScript(`
if ARGV[3] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[3])
  redis.call('DEL', ARGV[4] .. ARGV[3])
end
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
return 0
`)

// leaveScript: KEYS[1] queue; ARGV[1] waiter id, ARGV[2] the liveness key prefix.
var leaveScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', ARGV[2] .. ARGV[1])
return 1
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

	bg     context.Context // parent of background clean-ups; cancelled by Close
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

// QueueKey returns the Redis key of the waiter queue of the lock named name.
func (b *Backend) QueueKey(name string) string { return b.prefix + "queue:" + name }

func (b *Backend) ticketKey() string    { return b.prefix + "ticket" }
func (b *Backend) waiterPrefix() string { return b.prefix + "waiter:" }
func (b *Backend) abandonedKey(head string) string {
	return b.prefix + "abandoned:" + strings.TrimSuffix(head, ":")
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
	code, val, _, err := s.grant(ctx, key, head, "")
	switch {
	case err != nil:
		s.abandon(key, head, "")
		return lockclient.Grant{}, unavailable("try-acquire", key, err)
	case code != 1:
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	return s.granted(key, head, val)
}

// grant runs grantScript for request head, as waiter (or "" for TryAcquire).
func (s *session) grant(ctx context.Context, key, head, waiter string) (code int64, val any, rank int64, err error) {
	b := s.b
	res, err := grantScript.Run(ctx, b.rdb,
		[]string{b.LockKey(key), b.TokenKey(), b.QueueKey(key), b.abandonedKey(head), b.ticketKey()},
		head, s.ttlMillis, s.owner, waiter, b.waiterPrefix()).Slice()
	if err != nil {
		return 0, nil, 0, err
	}
	if len(res) < 2 {
		return 0, nil, 0, fmt.Errorf("unexpected reply %v", res)
	}
	code, ok := res[0].(int64)
	if !ok {
		return 0, nil, 0, fmt.Errorf("unexpected reply %v", res)
	}
	if len(res) > 2 {
		rank, _ = res[2].(int64)
	}
	return code, res[1], rank, nil
}

// granted makes the Grant of a granted request from the token string the script sent.
func (s *session) granted(key, head string, val any) (lockclient.Grant, error) {
	str, ok := val.(string)
	if !ok {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("token %v is not a decimal string", val))
	}
	tok, err := strconv.ParseUint(str, 10, 64)
	if err != nil || tok == 0 {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("invalid token %q", str))
	}
	value := head + str + ":" + s.owner
	return lockclient.Grant{Key: key, Token: tok, Data: value}, nil
}

// AcquireQueued implements lockclient.QueueSession (see the package doc: a FIFO queue
// per key, polled).
func (s *session) AcquireQueued(ctx context.Context, key string) (lockclient.Grant, time.Time, error) {
	req, err := randomHex(8)
	if err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	head := s.id + ":" + req + ":"
	waiter := s.id + ":" + req
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	queued := false
	for {
		sent := time.Now()
		code, val, rank, err := s.grant(ctx, key, head, waiter)
		if err != nil {
			// Unknown outcome: the request may still grant the key, or queue us.
			s.abandon(key, head, waiter)
			return lockclient.Grant{}, time.Time{}, unavailable("acquire", key, err)
		}
		if code == 1 {
			g, err := s.granted(key, head, val)
			return g, sent, err
		}
		queued = true
		pttl, _ := val.(int64)
		var d time.Duration
		if rank <= 2 {
			// Among the first three in line: poll soon, and the first one also just after
			// the holder's expiry if that comes first.
			d = s.b.pollMin + backendutil.PollDelay(0, s.b.pollMin)
			if code == 0 && pttl > 0 {
				d = min(d, time.Duration(pttl)*time.Millisecond+backendutil.AfterExpiry())
			}
		} else {
			d = backendutil.PollDelay(s.b.pollMax/2, s.b.pollMax)
		}
		d = min(d, time.Duration(s.ttlMillis)*time.Millisecond/3) // keep the liveness key
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			if queued {
				s.leave(key, waiter)
			}
			return lockclient.Grant{}, time.Time{}, fmt.Errorf("redislock: acquire %q: %w", key, ctx.Err())
		}
	}
}

// leave removes waiter from key's queue, in the background (an unreachable server
// drops it when its liveness key expires).
func (s *session) leave(key, waiter string) {
	s.background(func(ctx context.Context) error {
		return leaveScript.Run(ctx, s.b.rdb, []string{s.b.QueueKey(key)}, waiter, s.b.waiterPrefix()).Err()
	})
}

// abandon makes sure the grant request head, whose outcome is unknown, leaves no grant
// and no queue entry, in the background (see the package doc).
func (s *session) abandon(key, head, waiter string) {
	s.background(func(ctx context.Context) error {
		return abandonScript.Run(ctx, s.b.rdb, []string{s.b.LockKey(key), s.b.abandonedKey(head), s.b.QueueKey(key)},
			head, s.ttlMillis, waiter, s.b.waiterPrefix()).Err()
	})
}

// background runs f until it succeeds, with backoff, for at most one TTL (by then what
// it cleans up has expired) or until Close.
func (s *session) background(f func(ctx context.Context) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, time.Duration(s.ttlMillis)*time.Millisecond)
		defer cancel()
		backendutil.Retry(ctx, time.Second, 10*time.Millisecond, time.Second, f)
	}()
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
	delay := func() time.Duration { return backendutil.PollDelay(s.b.pollMin, s.b.pollMax) }
	return backendutil.WaitFree(ctx, delay, func(ctx context.Context) (bool, time.Duration, error) {
		pttl, err := s.b.rdb.PTTL(ctx, s.b.LockKey(key)).Result()
		switch {
		case err != nil:
			return false, 0, unavailable("wait", key, err)
		case pttl == -2 || (pttl >= 0 && pttl < time.Millisecond):
			return true, 0, nil // free, or expiring now
		}
		return false, max(pttl, 0), nil // -1: no expiry set; poll
	})
}

// Close ends the session, waiting within ctx for the clean-up of abandoned requests to
// finish (it is cancelled when ctx ends). Locks it still holds expire after their TTL
// (lockclient's Client releases its leases before closing the session).
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.stop()
		<-done
	}
	s.stop()
	return nil
}

func unavailable(op, key string, err error) error {
	if errors.Is(err, redis.Nil) {
		err = fmt.Errorf("unexpected nil reply: %w", err)
	}
	return backendutil.Unavailable("redislock", op, key, err)
}
