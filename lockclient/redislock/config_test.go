package redislock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/logtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// Invalid values given to New are reported, not replaced by defaults: CheckConfig,
// lockclient.NewChecked and Open return an error wrapping lockclient.ErrInvalidConfig
// that names the option and the value, and a Client's Acquire fails with it at once,
// without contacting Redis (the client points at a closed port).
func TestInvalidOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, option, value string
		rdb                 redis.UniversalClient
		opts                []redislock.Option
	}{
		{"zero poll minimum", "WithPollInterval", "min 0s", rdb, []redislock.Option{redislock.WithPollInterval(0, time.Second)}},
		{"negative poll minimum", "WithPollInterval", "min -1ms", rdb, []redislock.Option{redislock.WithPollInterval(-time.Millisecond, time.Second)}},
		{"poll maximum below minimum", "WithPollInterval", "max 1ms", rdb, []redislock.Option{redislock.WithPollInterval(time.Second, time.Millisecond)}},
		{"nil client", "New", "nil", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := redislock.New(tc.rdb, tc.opts...)
			check := func(what string, err error) {
				t.Helper()
				if !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable) {
					t.Fatalf("%s = %v, want ErrInvalidConfig and not ErrUnavailable", what, err)
				}
				if !strings.Contains(err.Error(), tc.option) || !strings.Contains(err.Error(), tc.value) {
					t.Fatalf("%s error %q does not name %s and %s", what, err, tc.option, tc.value)
				}
			}
			check("CheckConfig", b.CheckConfig())
			c, err := lockclient.NewChecked(b)
			check("NewChecked", err)
			defer c.Close(ctx)
			start := time.Now()
			_, err = c.Acquire(ctx, "k")
			check("Acquire", err)
			_, err = c.TryAcquire(ctx, "k")
			check("TryAcquire", err)
			_, err = b.Open(ctx, "o", time.Second)
			check("Open", err)
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("took %v: want at once", d)
			}
		})
	}
	if err := redislock.New(rdb, redislock.WithPollInterval(time.Millisecond, time.Millisecond)).CheckConfig(); err != nil {
		t.Fatalf("CheckConfig of valid options = %v", err)
	}
}

// The backend's warnings (maxmemory-policy not checked, or accepted with
// WithAllowEviction) go to the logger of WithLogger only: nothing reaches slog's default
// logger (or package log), with or without WithLogger.
func TestWarningsOnlyThroughGivenLogger(t *testing.T) {
	n := newNamespace(t)
	ctx := ctxT(t, 10*time.Second)
	def := logtest.CaptureDefault(t)
	for _, tc := range []struct {
		hook configHook
		opts []redislock.Option
	}{
		{configHook{policy: "volatile-lru"}, []redislock.Option{redislock.WithAllowEviction()}},
		{configHook{err: serverError("ERR unknown command 'CONFIG'")}, nil},
	} {
		for _, given := range []bool{true, false} {
			rec := logtest.New()
			opts := append([]redislock.Option{redislock.WithPrefix(n.prefix)}, tc.opts...)
			if given {
				opts = append(opts, redislock.WithLogger(rec.Logger()))
			}
			rdb := n.client("x")
			rdb.AddHook(tc.hook)
			s, err := redislock.New(rdb, opts...).Open(ctx, "x", time.Second)
			if err != nil {
				t.Fatalf("Open (%+v): %v", tc.hook, err)
			}
			s.Close(ctx)
			if got := rec.Messages(); given && (len(got) != 1 || !strings.Contains(got[0], "maxmemory-policy")) {
				t.Fatalf("%+v: given logger got %q, want one warning about maxmemory-policy", tc.hook, got)
			}
		}
	}
	if got := def.Messages(); len(got) != 0 {
		t.Fatalf("slog's default logger got %q, want nothing", got)
	}
}
