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
