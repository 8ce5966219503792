package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// refusedRepeat runs lockfloor, which must refuse the repeated flag: exit 2, nothing on
// stdout, stderr naming the flag (and never a repeated DSN's password).
func refusedRepeat(t *testing.T, flag string, args ...string) {
	t.Helper()
	code, out, errOut := lockfloor(t, args...)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "flag -"+flag+" given more than once") {
		t.Errorf("lockfloor %q: exit %d, stdout %q, stderr %q; want exit 2 naming -%s and nothing printed", args, code, out, errOut, flag)
	}
	if strings.Contains(errOut, "S3cr3t") {
		t.Errorf("lockfloor %q: stderr shows the repeated DSN's password: %q", args, errOut)
	}
}

// TestRepeatedFlagsRefusedBeforeConnecting: every flag but -at-least given twice is a
// usage error, before any service is reached (red-team rt62c F2: the last value won
// without a word).
func TestRepeatedFlagsRefusedBeforeConnecting(t *testing.T) {
	etcd := []string{"-backend", "etcd", "-endpoints", "127.0.0.1:1"}
	refusedRepeat(t, "raise", append(etcd, "-raise", "1000", "-raise", "5")...)
	refusedRepeat(t, "show", append(etcd, "-show", "-show")...)
	refusedRepeat(t, "retire", append(etcd, "-retire", "-retire=true")...)
	refusedRepeat(t, "margin", append(etcd, "-failover", "-margin", "4294967296", "-margin", "0")...)
	refusedRepeat(t, "endpoints", append(etcd, "-endpoints", "127.0.0.1:2", "-show")...)
	refusedRepeat(t, "backend", "-backend", "postgres", "-dsn", "postgres://u:S3cr3t@127.0.0.1:1/db", "-backend", "mysql", "-show")
	refusedRepeat(t, "dsn", "-backend", "postgres", "-dsn", "postgres://a@127.0.0.1:1/db", "-dsn", "postgres://u:S3cr3t@127.0.0.1:1/db", "-show")
}

// TestRepeatedFlagsRefusedNothingRaised: against a live service, a repeated -prefix,
// -raise, -failover or -retire is refused (exit 2) and changes nothing — no floor
// raised, no retirement — while -at-least stays repeatable, the highest counting
// (red-team rt62c F2: `-prefix app: -prefix other: -failover -live` answered the other
// service, below the application's leases; `-raise N -raise 5` raised to 5).
func TestRepeatedFlagsRefusedNothingRaised(t *testing.T) {
	addr, prefix := testdb.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	appPrefix, otherPrefix := prefix+"app:", prefix+"other:"
	for _, p := range []string{appPrefix, otherPrefix} {
		c := lockclient.New(redislock.New(newRedis(t, addr), redislock.WithPrefix(p)), lockclient.WithTTL(5*time.Second))
		l, err := c.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
		c.Close(ctx)
	}
	svc := []string{"-backend", "redis", "-addr", addr, "-prefix", appPrefix}
	before := number(t, append(svc, "-show")...)
	high := strconv.FormatUint(before+1_000_000, 10)

	refusedRepeat(t, "prefix", append(svc, "-prefix", otherPrefix, "-failover", "-live")...)
	refusedRepeat(t, "raise", append(svc, "-raise", high, "-raise", "5")...)
	refusedRepeat(t, "failover", append(svc, "-failover", "-margin", "1000", "-failover")...)
	refusedRepeat(t, "retire", append(svc, "-retire", "-retire")...)
	if got := number(t, append(svc, "-show", "-live")...); got != before {
		t.Fatalf("after the refused runs: -show -live printed %d, want %d unchanged (nothing raised, not retired)", got, before)
	}

	// -at-least is repeatable: the highest counts.
	if got, want := number(t, append(svc, "-failover", "-margin", "1000", "-at-least", high, "-at-least", "5")...), before+1_000_000+1000; got != want {
		t.Fatalf("-failover -margin 1000 -at-least %s -at-least 5 printed %d, want %d", high, got, want)
	}
}
