package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// TestCounterAboveMaxInt64IsConfigError (red-team rt31b F5): the token counter holds a
// canonical 19-digit decimal above 2^63−1 ("9223372036854775808", "9999999999999999999":
// a restore of another tool's key, a hand-edit). No token can be drawn from it: the
// scripts' canon() refuses it like a corrupt counter, so RaiseFloor never reports
// success without raising, and grants, RaiseFloor and LastToken fail at once with an
// error wrapping ErrInvalidConfig, never ErrUnavailable retried until the deadline.
func TestCounterAboveMaxInt64IsConfigError(t *testing.T) {
	for _, bad := range []string{"9223372036854775808", "9999999999999999999"} {
		t.Run(bad, func(t *testing.T) {
			n := newNamespace(t)
			n.prefix = "maxint:" + n.prefix
			ctx := ctxT(t, 10*time.Second)
			b := n.backend("a")
			if err := n.client("admin").Set(ctx, b.TokenKey(), bad, 0).Err(); err != nil {
				t.Fatal(err)
			}
			admin := n.client("admin")
			t.Cleanup(func() {
				ctx := context.Background()
				keys, _ := admin.Keys(ctx, n.prefix+"*").Result()
				if len(keys) > 0 {
					admin.Del(ctx, keys...)
				}
			})
			var problems []string
			if err := b.RaiseFloor(ctx, 500); err == nil {
				v, _ := n.client("admin").Get(ctx, b.TokenKey()).Result()
				problems = append(problems, "RaiseFloor(500) returned nil; the counter holds "+strconv.Quote(v))
			} else if !errors.Is(err, lockclient.ErrInvalidConfig) {
				problems = append(problems, "RaiseFloor(500) = "+err.Error()+"; want ErrInvalidConfig")
			}
			if _, err := b.LastToken(ctx); !errors.Is(err, lockclient.ErrInvalidConfig) {
				problems = append(problems, "LastToken error "+errString(err)+"; want ErrInvalidConfig")
			}
			c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
			defer c.Close(context.Background())
			actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			defer cancel()
			start := time.Now()
			l, err := c.Acquire(actx, "k")
			switch {
			case err == nil:
				problems = append(problems, "Acquire granted token "+strconv.FormatUint(l.Token(), 10))
				l.Release(ctx)
			case !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable):
				problems = append(problems, "Acquire = "+err.Error()+" after "+time.Since(start).Round(time.Millisecond).String()+
					"; want ErrInvalidConfig at once, not ErrUnavailable retried until the deadline")
			}
			if len(problems) > 0 {
				t.Fatalf("counter %q:\n%s", bad, strings.Join(problems, "\n"))
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestTokenGoesBackUnderOneClientRefused (red-team rt28b F2): the token counter goes back while one Client
// keeps running — Redis restored from an older RDB/AOF, or a lagged replica promoted
// (the counter exists but is lower: "SET <prefix>token <older value>"), or the counter
// deleted after the floor had been raised above the server clock (the clock seed is then
// lower). The same Client, which itself was granted token T a moment earlier, is then
// granted a token at or below T for the same lock without any error, and hands it to
// the application as a healthy lease.
//
// Right behaviour (G14; lockclient.Lease.Token: "strictly greater than the token of
// every earlier grant of the same lock service"; the brief's "never grant a token not
// greater than every token it granted before for that lock, or fail with a typed
// error"): the package doc concedes that a counter that went back "is not detected" at
// the server, but the Client (or the redislock session) has seen T and can detect it for
// free: a grant whose token is not above the highest token this Client was granted
// should be refused (released, and reported with a typed error such as one wrapping
// ErrInvalidConfig naming the counter and the fix: raise the floor), not handed out.
func TestTokenGoesBackUnderOneClientRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor uint64 // raised before the first grant
		lose  func(ctx context.Context, n *namespace, tokenKey string, first uint64) error
	}{
		{"counter-restored-lower", 0, func(ctx context.Context, n *namespace, key string, first uint64) error {
			return n.client("admin").Set(ctx, key, strconv.FormatUint(first-100, 10), 0).Err()
		}},
		{"counter-deleted-after-floor-above-clock", 1_000_000_000_000_000_000, func(ctx context.Context, n *namespace, key string, _ uint64) error {
			return n.client("admin").Del(ctx, key).Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNamespace(t)
			ctx := ctxT(t, 10*time.Second)
			b := n.backend("a")
			if tc.floor > 0 {
				if err := b.RaiseFloor(ctx, tc.floor); err != nil {
					t.Fatal(err)
				}
			}
			c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
			defer c.Close(context.Background())
			l1, err := c.Acquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			first := l1.Token()
			if err := l1.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tc.lose(ctx, n, b.TokenKey(), first); err != nil {
				t.Fatal(err)
			}
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			l2, err := c.Acquire(actx, "k")
			if err != nil {
				if errors.Is(err, lockclient.ErrInvalidConfig) {
					return // typed refusal
				}
				t.Fatalf("Acquire after the counter went back: %v; want a typed error (ErrInvalidConfig) or a token above %d", err, first)
			}
			defer l2.Release(ctx)
			if l2.Token() <= first {
				t.Fatalf("the same Client was granted token %d for %q after its own earlier grant of token %d: "+
					"the token went back and nothing refused it", l2.Token(), "k", first)
			}
		})
	}
}

// TestCorruptCounterIsConfigError (red-team rt28b F7): the token counter holds something that is
// not a token — "abc", or a negative number such as "-1000000000" (a DECRBY, a restore of
// another tool's key, a hand-edit). RaiseFloor(500) compares decimal strings by length
// and then bytewise, finds "500" not greater, changes nothing and returns nil: the
// switch procedure (lockfloor -raise) reports success. Every grant then fails with an
// error wrapping ErrUnavailable, so Acquire retries until the caller's deadline as if
// Redis were down.
//
// Right behaviour: RaiseFloor (and the grant script) check that the counter holds a
// canonical non-negative integer and otherwise fail with a typed error (wrapping
// ErrInvalidConfig, naming the counter), as the exhausted counter already does; a raise
// never reports success for a floor it did not put in force.
func TestCorruptCounterIsConfigError(t *testing.T) {
	for _, bad := range []string{"abc", "-1000000000"} {
		t.Run(bad, func(t *testing.T) {
			n := newNamespace(t)
			ctx := ctxT(t, 10*time.Second)
			b := n.backend("a")
			if err := n.client("admin").Set(ctx, b.TokenKey(), bad, 0).Err(); err != nil {
				t.Fatal(err)
			}
			var problems []string
			if err := b.RaiseFloor(ctx, 500); err == nil {
				v, _ := n.client("admin").Get(ctx, b.TokenKey()).Result()
				problems = append(problems, "RaiseFloor(500) returned nil; the counter holds "+strconv.Quote(v))
			}
			c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
			defer c.Close(context.Background())
			actx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			defer cancel()
			start := time.Now()
			l, err := c.Acquire(actx, "k")
			switch {
			case err == nil:
				problems = append(problems, "Acquire granted token "+strconv.FormatUint(l.Token(), 10))
				l.Release(ctx)
			case !errors.Is(err, lockclient.ErrInvalidConfig) || errors.Is(err, lockclient.ErrUnavailable):
				problems = append(problems, "Acquire = "+err.Error()+" after "+time.Since(start).Round(time.Millisecond).String()+
					"; want ErrInvalidConfig at once, not ErrUnavailable retried until the deadline")
			}
			if len(problems) > 0 {
				t.Fatalf("counter %q:\n%s", bad, strings.Join(problems, "\n"))
			}
		})
	}
}
