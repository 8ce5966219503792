package redislock

import (
	"github.com/redis/go-redis/v9"
)

// The Lua scripts: each operation on a lock, its token counter and its queue runs as
// one script, atomically at the server.

// seedLua starts the scripts that may create the token counter: seed() returns the
// server's clock (TIME) in microseconds as a canonical decimal string, or nil if the
// clock gives no usable value (before 1970, or past 10^18 µs, which keeps the counter
// far below 2^63−1). TIME is not deterministic, so the scripts must be replicated by
// their effects: the only mode of Redis 7 and the default since Redis 5; before that,
// redis.replicate_commands() selects it (since Redis 7 it is a deprecated no-op, called
// only if it still exists).
//
// seed(atleast) returns atleast instead when it is a larger canonical decimal string:
// the Backend's WithMinToken floor (floorSeed), so that a counter lost after the floor
// was raised comes back above it, not at a clock value below the tokens granted since
// the raise (a service raised above a retired one by its margin, lockclient.RetirementMargin;
// red-team rt44c F2). greater(a, b) compares canonical decimal strings (Lua numbers are
// doubles); add(a, b) adds two of them.
const seedLua = `
if redis.replicate_commands then redis.replicate_commands() end
local function greater(a, b)
  return #a > #b or (#a == #b and a > b)
end
local function add(a, b)
  local r, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local d = carry
    if i > 0 then d = d + tonumber(string.sub(a, i, i)); i = i - 1 end
    if j > 0 then d = d + tonumber(string.sub(b, j, j)); j = j - 1 end
    table.insert(r, 1, tostring(d % 10))
    carry = math.floor(d / 10)
  end
  return table.concat(r)
end
local function seed(atleast)
  local now = redis.call('TIME')
  local s, us = now[1], tonumber(now[2])
  if not string.match(s, '^[1-9]%d*$') or #s > 12 or not us or us < 0 or us > 999999 then
    return nil
  end
  local t = s .. string.format('%06d', us)
  if atleast and string.match(atleast, '^[1-9]%d*$') and greater(atleast, t) then return atleast end
  return t
end
local noseed = 'redislock: the server clock (TIME) gives no usable token seed'
local exhausted = '` + exhaustedReply + `'
local corrupt = '` + corruptReply + `'
local retired = '` + retiredReply + `'
local function isretired(v)
  return string.sub(v, 1, 8) == 'retired:'
end
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
local function canon(v)
  return (v == '0' or string.match(v, '^[1-9]%d*$') ~= nil) and (#v < 19 or (#v == 19 and v <= '9223372036854775807'))
end
`

// retiredReply is the error reply of a grant or raise that finds the token counter
// holding the mark of a retired service, "retired:<last token>" (Backend.Retire): it
// grants nothing, for good (see grantFailed). A script of an earlier release refuses the
// mark as a counter that holds no token (corruptReply).
const retiredReply = "redislock: the lock service was retired"

// notPrimaryReply is the error reply of the floor scripts (raise, last token, retire)
// on a server that is not the primary: their notprimaryreply() check — a PERSIST of the
// counter, a write that a read-only replica refuses (READONLY) before anything runs,
// and INFO replication's role (a writable replica) — runs in the same script as the
// read, so no extra round trip (red-team rt37c F2). A replica's counter may lag tokens
// the primary granted. Where the account may not run INFO, the check answers
// unverifiedReply and the caller reads ROLE (primaryMode), then runs the script again
// with the mode "role:master" (ROLE said so) or, for LastToken and RaiseFloor only,
// "unverified" (ROLE refused too).
//
// notprimaryreply(key, mode) returns that error reply, or nil when the script may go on;
// rolereply(mode) is its INFO part alone, without the PERSIST, for a script that writes
// nothing (retiredScript: on a read-only replica INFO's role answers "slave").
const notPrimaryReply = "redislock: the server is not the primary"

// corruptReply starts the error reply of a grant or raise that finds the token counter
// holding something that is not a canonical non-negative integer up to 2^63−1 ("abc",
// "-5", "007", "9223372036854775808": canon() compares a 19-digit value with 2^63−1 as
// a string of the same length): no token can be drawn from it, and no raise can be
// compared with it (see grantFailed; red-team rt28b F7, rt31b F5).
const corruptReply = "redislock: the token counter does not hold a token"

// exhaustedReply is the error reply of a grant that finds the token counter at the
// largest Redis integer, 2^63−1: no later token can be greater (see grantFailed).
const exhaustedReply = "redislock: the token counter is at its end"

// grantScript: KEYS[1] lock, KEYS[2] token counter, KEYS[3] queue, KEYS[4] the
// request's abandonment mark, KEYS[5] ticket counter; ARGV[1] "<session>:<request>:",
// ARGV[2] ttl in ms, ARGV[3] owner, ARGV[4] waiter id ("" for TryAcquire), ARGV[5] the
// liveness key prefix, ARGV[6] the lowest token a seeded counter may grant (floorSeed:
// WithMinToken + 1, or "0"). Returns {1, token} (the token as a decimal string: never a Lua
// number, which is a double) when granted; {0, pttl, rank} when the key is held;
// {-1, pttl, rank} when a live waiter is first in the queue (rank: the waiter's position
// in the queue, 0 first). A waiter that is not granted is queued (once) and its liveness
// key refreshed. A grant INCRs the counter; if the counter does not exist (a fresh
// service, or one that lost its keys) it sets it to the server's clock in microseconds
// instead (seedLua), or to ARGV[6] when that is higher, so that tokens do not restart at 1
// nor below the Backend's WithMinToken. A counter at 2^63−1 grants
// nothing: the script answers the error reply exhaustedReply; a counter that holds no
// canonical non-negative integer grants nothing either (corruptReply), nor does the
// mark of a retired service (retiredReply).
var grantScript = redis.NewScript(seedLua + `
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
local t
local cur = redis.call('GET', KEYS[2])
if cur then
  if isretired(cur) then return redis.error_reply(retired) end
  if not canon(cur) then return redis.error_reply(corrupt) end
  if cur == '9223372036854775807' then return redis.error_reply(exhausted) end
  redis.call('INCR', KEYS[2])
  t = redis.call('GET', KEYS[2])
else
  t = seed(ARGV[6])
  if not t then return redis.error_reply(noseed) end
  redis.call('SET', KEYS[2], t)
end
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
