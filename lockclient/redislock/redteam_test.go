package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// configHook answers CONFIG GET maxmemory-policy as a server with policy would (or with
// err, as a server that forbids CONFIG), without changing the shared test server.
type configHook struct {
	policy string
	err    error
}

func (h configHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h configHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h configHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c, ok := cmd.(*redis.MapStringStringCmd); ok && cmd.Name() == "config" {
			if h.err != nil {
				c.SetErr(h.err)
				return h.err
			}
			c.SetVal(map[string]string{"maxmemory-policy": h.policy})
			return nil
		}
		return next(ctx, cmd)
	}
}

// Redis evicts keys with an expiry under every volatile-* policy (and any key under
// allkeys-*): Open refuses such a server unless WithAllowEviction; noeviction, and a
// server that forbids CONFIG (with a warning), are accepted.
func TestEvictionPolicyChecked(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	for _, tc := range []struct {
		hook  configHook
		opts  []redislock.Option
		refus bool
	}{
		{configHook{policy: "volatile-lru"}, nil, true},
		{configHook{policy: "volatile-ttl"}, nil, true},
		{configHook{policy: "allkeys-lru"}, nil, true},
		{configHook{policy: "noeviction"}, nil, false},
		{configHook{policy: "volatile-lru"}, []redislock.Option{redislock.WithAllowEviction()}, false},
		{configHook{err: serverError("ERR unknown command 'CONFIG'")}, nil, false},
	} {
		rdb := n.client("x")
		rdb.AddHook(tc.hook)
		b := redislock.New(rdb, append([]redislock.Option{redislock.WithPrefix(n.prefix)}, tc.opts...)...)
		s, err := b.Open(ctx, "x", time.Second)
		if tc.refus {
			if !errors.Is(err, redislock.ErrEvictionPolicy) || errors.Is(err, lockclient.ErrUnavailable) {
				t.Fatalf("Open with maxmemory-policy %s = %v, want ErrEvictionPolicy", tc.hook.policy, err)
			}
			// The Client reports it, it does not wait for it.
			c := lockclient.New(b, lockclient.WithTTL(time.Second))
			if _, err := c.Acquire(ctx, "k"); !errors.Is(err, redislock.ErrEvictionPolicy) {
				t.Fatalf("Acquire on a server with %s = %v", tc.hook.policy, err)
			}
			c.Close(ctx)
			continue
		}
		if err != nil {
			t.Fatalf("Open (%+v): %v", tc.hook, err)
		}
		s.Close(ctx)
	}
	// The real test server is configured as the doc says.
	if _, err := n.backend("y").Open(ctx, "y", time.Second); err != nil {
		t.Fatalf("Open on the test server: %v", err)
	}
}

// Tokens stay exact past 2^53, where Lua numbers (doubles) lose integers: the counter is
// seeded just below and every grant gets the next integer, all distinct.
func TestTokensExactPast2To53(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	admin := newClient(t, n.Target())
	b := n.backend("a")
	const start = uint64(1)<<53 - 3
	if err := admin.Set(ctx, b.TokenKey(), start, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := locktest.OpenSession(t, b, "a", time.Minute)
	want := start
	for i := range 8 {
		want++
		g, err := s.TryAcquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if g.Token != want {
			t.Fatalf("grant %d: token %d, want %d", i, g.Token, want)
		}
		if err := s.Renew(ctx, g); err != nil {
			t.Fatalf("Renew of token %d: %v", g.Token, err)
		}
		if err := s.Release(ctx, g); err != nil {
			t.Fatalf("Release of token %d: %v", g.Token, err)
		}
	}
	// Through the queue too.
	c := lockclient.New(b, lockclient.WithTTL(time.Minute))
	defer c.Close(ctx)
	l, err := c.Acquire(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	if want++; l.Token() != want {
		t.Fatalf("queued grant: token %d, want %d", l.Token(), want)
	}
	l.Release(ctx)
	if got, err := admin.Get(ctx, b.TokenKey()).Uint64(); err != nil || got != want {
		t.Fatalf("counter %d (%v), want %d", got, err, want)
	}
}

// serverError is an error reply of the server (redis.Error).
type serverError string

func (e serverError) Error() string { return string(e) }
func (serverError) RedisError()     {}
