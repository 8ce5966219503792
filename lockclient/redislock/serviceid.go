package redislock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
)

// A session's identity (lockclient.ServiceIdentifier) names the token counter
// <prefix>token by a random value stored beside it, in <prefix>service-id: the first
// Open of any process on a fresh prefix draws it (SET only if absent, in one script),
// every later one reads it. Every Backend and process on one server (and database
// number) with one prefix therefore answers the same identity, whatever address it
// dials, and another server, database number or prefix another. The identity is
// "redis:<prefix>:<stored value>". It is read once per Backend (one round trip at its
// first Open, cached), not per grant. Data lost with the counter (a flush, a restart
// without persistence) loses it too: the counter then starts again elsewhere (seeded
// from the clock, or WithMinToken's floor when higher), and the next Backend to open
// draws a new identity for it, while open Backends keep their cached one (their leases
// then differ and fencedsql refuses them together: restart the processes).

var _ lockclient.ServiceIdentifier = (*session)(nil)

// serviceIDScript returns the stored identity of the prefix, storing ARGV[1] first
// when there is none.
var serviceIDScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
`)

// ServiceIDKey returns the Redis key that holds the identity of the prefix's token
// counter.
func (b *Backend) ServiceIDKey() string { return b.prefix + "service-id" }

// serviceID returns the identity of the prefix's token counter, read (or drawn) at the
// first call and cached; an unreachable server yields an error wrapping
// lockclient.ErrUnavailable, and the next call tries again.
func (b *Backend) serviceID(ctx context.Context) (string, error) {
	b.idMu.Lock()
	defer b.idMu.Unlock()
	if b.id != "" {
		return b.id, nil
	}
	fresh, err := randomHex(16)
	if err != nil {
		return "", err
	}
	v, err := serviceIDScript.Run(ctx, b.rdb, []string{b.ServiceIDKey()}, fresh).Text()
	if err != nil {
		return "", unavailable("open", "", fmt.Errorf("read the service identity: %w", err))
	}
	b.id = "redis:" + b.prefix + ":" + v
	return b.id, nil
}

// ServiceID implements lockclient.ServiceIdentifier: the identity its Backend read
// when the session was opened.
func (s *session) ServiceID() string { return s.serviceID }
