package redislock

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts: each operation on a lock, its token counter and its queue runs as
// one script, atomically at the server.

// seedLua starts the scripts that may create the token counter, after primaryLua (the
// primary check, primary.go). clock() returns the
// server's clock (TIME) in microseconds as a canonical decimal string, or nil if the
// clock gives no usable value (before 1970, or past 10^18 µs, which keeps the counter
// far below 2^63−1). TIME is not deterministic, so the scripts must be replicated by
// their effects: the only mode of Redis 7 and the default since Redis 5; before that,
// primaryLua's redis.replicate_commands() selects it. greater(a, b) compares canonical decimal strings (Lua
// numbers are doubles); add(a, b) adds two of them.
//
// The seed rule (red-team rt45d F1–F3; the package doc, "Lost counters"): a missing
// counter is seeded at clock + m, m being the service's clock offset — the largest of
// the Backend's WithMinToken and the offset recorded under <prefix>token-offset (the
// offset key: the largest WithMinToken any Backend applied), "0" for a service whose
// processes have none. The counter stays at most offset + clock (each seed and adoption
// sets it there at most, a raise above it is refused, and a grant INCRs it by one, fewer
// than one per microsecond), so a seed after a loss is above every token issued before
// it. adopt() applies the rule to the counter read (cur: a canonical token, or nil) for
// the Backend's WithMinToken m:
//   - a missing counter is seeded at clock + max(m, offset) — when mayseed, or when that
//     offset is not 0; otherwise the answer is lostReply (Retire has its own rule);
//   - with strict (a grant, a raise of a Backend with WithMinToken), a recorded offset
//     above m is offsetReply: this process would seed a lost counter below tokens issued;
//   - m above the recorded offset is adopted: the counter goes to clock + m if below it
//     (it may have been seeded lower after a loss — by a process or tool without
//     WithMinToken, F3 — and m is the one offset known to bound the tokens issued before),
//     and the offset key to m; a counter already above clock + m is aboveReply (m does not
//     bound it).
//
// It returns the counter afterwards and the offset in force, or nil and an error reply.
var seedLua = primaryLua + `
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
local function clock()
  local now = redis.call('TIME')
  local s, us = now[1], tonumber(now[2])
  if not string.match(s, '^[1-9]%d*$') or #s > 12 or not us or us < 0 or us > 999999 then
    return nil
  end
  return s .. string.format('%06d', us)
end
local noseed = 'redislock: the server clock (TIME) gives no usable token seed'
local exhausted = '` + exhaustedReply + `'
local corrupt = '` + corruptReply + `'
local retired = '` + retiredReply + `'
local function isretired(v)
  return string.sub(v, 1, 8) == 'retired:'
end
local function canon(v)
  return (v == '0' or string.match(v, '^[1-9]%d*$') ~= nil) and (#v < 19 or (#v == 19 and v <= '9223372036854775807'))
end
local toplimit = '` + maxFloorString + `'
local lost = '` + lostReply + `'
local offsetbelow = '` + offsetReply + `'
local above = '` + aboveReply + `'
local raiseabove = '` + raiseAboveReply + `'
local function seedat(m)
  local t = clock()
  if not t then return nil, redis.error_reply(noseed) end
  local v = add(t, m)
  if greater(v, toplimit) then return nil, redis.error_reply(exhausted) end
  return v
end
local function offsetof(hkey)
  local h = redis.call('GET', hkey)
  if not h then return '0' end
  if not canon(h) then return nil end
  return h
end
local function adopt(ckey, hkey, cur, m, mayseed, strict)
  local h = offsetof(hkey)
  if not h then return nil, redis.error_reply(corrupt .. ' (the offset key)') end
  if strict and greater(h, m) then return nil, redis.error_reply(offsetbelow .. ' ' .. h) end
  local base = h
  if greater(m, base) then base = m end
  if not cur then
    if not mayseed and base == '0' then return nil, redis.error_reply(lost) end
    local v, e = seedat(base)
    if not v then return nil, e end
    redis.call('SET', ckey, v)
    if greater(base, h) then redis.call('SET', hkey, base) end
    return v, base
  end
  if greater(m, h) then
    local v, e = seedat(m)
    if not v then return nil, e end
    if greater(cur, v) then return nil, redis.error_reply(above .. ' ' .. cur) end
    redis.call('SET', ckey, v)
    redis.call('SET', hkey, m)
    return v, m
  end
  return cur, base
end
`

// retiredReply is the error reply of a grant or raise that finds the token counter
// holding the mark of a retired service, "retired:<last token>" (Backend.Retire): it
// grants nothing, for good (see grantFailed). A script of an earlier release refuses the
// mark as a counter that holds no token (corruptReply).
const retiredReply = "redislock: the lock service was retired"

// corruptReply starts the error reply of a grant or raise that finds the token counter
// holding something that is not a canonical non-negative integer up to 2^63−1 ("abc",
// "-5", "007", "9223372036854775808": canon() compares a 19-digit value with 2^63−1 as
// a string of the same length): no token can be drawn from it, and no raise can be
// compared with it (see grantFailed; red-team rt28b F7, rt31b F5).
const corruptReply = "redislock: the token counter does not hold a token"

// lostReply is the error reply of Retire on a missing token counter when neither the
// Backend (WithMinToken) nor the offset key gives the service's offset: the service may
// have been raised above the clock before the loss, so no number is known to bound the
// tokens it issued, and nothing is written (red-team rt45d F2).
const lostReply = "redislock: the token counter is missing"

// offsetReply starts the error reply of a grant, or a raise of a Backend with
// WithMinToken, whose WithMinToken (none counts as 0) is below the offset recorded by
// another Backend of the service (the offset key); the recorded offset follows it. Such
// a process would seed a lost counter below the tokens the service issued.
const offsetReply = "redislock: WithMinToken is below the recorded offset of the service"

// aboveReply starts the error reply of an adoption (seedLua's adopt) that finds the
// counter, which follows it, above the server's clock plus the new WithMinToken: that
// WithMinToken does not bound the counter, so a lost counter would be seeded below
// the tokens issued.
const aboveReply = "redislock: the token counter lies above the clock plus WithMinToken"

// maxFloorString is maxFloor as a decimal string, for the scripts: no seed goes above it.
var maxFloorString = strconv.FormatUint(maxFloor, 10)

// exhaustedReply is the error reply of a grant that finds the token counter at the
// largest Redis integer, 2^63−1: no later token can be greater (see grantFailed).
const exhaustedReply = "redislock: the token counter is at its end"

// grantScript: KEYS[1] lock, KEYS[2] token counter, KEYS[3] queue, KEYS[4] the
// request's abandonment mark, KEYS[5] ticket counter, KEYS[6] the offset key; ARGV[1]
// "<session>:<request>:", ARGV[2] ttl in ms, ARGV[3] owner, ARGV[4] waiter id ("" for
// TryAcquire), ARGV[5] the liveness key prefix, ARGV[6] the Backend's WithMinToken
// (offsetArg: "0" without), ARGV[7] the primary check's mode (runChecked). It runs on
// the primary only: on any other server it answers notPrimaryReply and writes nothing
// (primaryLua; red-team rt48d F1). Returns {1, token} (the token as a decimal string: never a
// Lua number, which is a double) when granted; {0, pttl, rank} when the key is held;
// {-1, pttl, rank} when a live waiter is first in the queue (rank: the waiter's position
// in the queue, 0 first). A waiter that is not granted is queued (once) and its liveness
// key refreshed. A grant INCRs the counter, after the seed rule (seedLua's adopt, strict):
// a missing counter (a fresh service, or one that lost its keys) is seeded at the
// server's clock in microseconds plus the service's offset, and that seed is the token;
// a Backend whose WithMinToken is below the recorded offset grants nothing
// (offsetReply). A counter at 2^63−1 grants nothing: the script answers the error reply
// exhaustedReply; a counter that holds no canonical non-negative integer grants nothing
// either (corruptReply), nor does the mark of a retired service (retiredReply).
var grantScript = redis.NewScript(seedLua + `
local np = notprimaryreply(KEYS[2], ARGV[7])
if np then return np end
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
local cur = redis.call('GET', KEYS[2])
if cur then
  if isretired(cur) then return redis.error_reply(retired) end
  if not canon(cur) then return redis.error_reply(corrupt) end
end
local t, e = adopt(KEYS[2], KEYS[6], cur, ARGV[6], true, true)
if not t then return e end
if t == cur then
  if cur == '9223372036854775807' then return redis.error_reply(exhausted) end
  redis.call('INCR', KEYS[2])
  t = redis.call('GET', KEYS[2])
end
redis.call('SET', KEYS[1], ARGV[1] .. t .. ':' .. ARGV[3], 'PX', ARGV[2])
if ARGV[4] ~= '' then
  redis.call('ZREM', KEYS[3], ARGV[4])
  redis.call('DEL', ARGV[5] .. ARGV[4])
end
return {1, t}
`)

// abandonScript: KEYS[1] lock, KEYS[2] the request's abandonment mark, KEYS[3] queue,
// KEYS[4] token counter; ARGV[1] "<session>:<request>:", ARGV[2] ttl in ms, ARGV[3]
// waiter id or "", ARGV[4] the liveness key prefix, ARGV[5] the primary check's mode.
// Deletes the lock if the request got it (returns 1), else marks the request abandoned
// so that it grants nothing if it arrives later (returns 0); the waiter leaves the
// queue either way. Like every script below, it runs on the primary only (primaryLua).
var abandonScript = redis.NewScript(primaryLua + `
local np = notprimaryreply(KEYS[4], ARGV[5])
if np then return np end
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

// leaveScript: KEYS[1] queue, KEYS[2] token counter; ARGV[1] waiter id, ARGV[2] the
// liveness key prefix, ARGV[3] the primary check's mode.
var leaveScript = redis.NewScript(primaryLua + `
local np = notprimaryreply(KEYS[2], ARGV[3])
if np then return np end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', ARGV[2] .. ARGV[1])
return 1
`)

// renewScript: KEYS[1] lock, KEYS[2] token counter; ARGV[1] the grant's value, ARGV[2]
// ttl in ms, ARGV[3] the primary check's mode. Returns 1 if renewed, 0 if the key is
// missing or someone else's. On a replica it renews nothing (notPrimaryReply): a lease
// kept alive on a replica's copy is no lease at the primary (red-team rt48d F1).
var renewScript = redis.NewScript(primaryLua + `
local np = notprimaryreply(KEYS[2], ARGV[3])
if np then return np end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript: KEYS[1] lock, KEYS[2] token counter; ARGV[1] the grant's value,
// ARGV[2] the primary check's mode. Returns 1 if deleted, 0 if the key is missing, -1
// if it is someone else's.
var releaseScript = redis.NewScript(primaryLua + `
local np = notprimaryreply(KEYS[2], ARGV[2])
if np then return np end
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
if v then return -1 end
return 0
`)
