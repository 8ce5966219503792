package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestRedisEmptyPrefixRaisesItsCounter (red-team rt28b F4): redislock accepts WithPrefix("")
// (its keys are then lock:<name> and token), but lockfloor treats `-prefix ""` as "not
// given" and raises the default prefix's counter, fencedsql:token, instead. It exits 0
// and prints that other counter's LastToken (at least N), so the operator's switch
// procedure ("lockfloor -raise $max" before the first grant) reports success while the
// application's own counter is untouched: its next grant carries a token far below N,
// below the tokens the guarded database already accepted.
//
// Right behaviour: `-prefix ""` given explicitly must mean the empty prefix (use
// flag.Visit / a set-flag check, not `prefix != ""`), or be refused as a usage error
// (exit 2) — never a raise of a different counter. (redislock.WithPrefix("") could also
// be refused like etcdlock's, making both agree.) The test uses Redis database 14 and
// deletes only the keys it created there.
func TestRedisEmptyPrefixRaisesItsCounter(t *testing.T) {
	addr := os.Getenv("FENCEDSQL_REDIS_ADDR")
	if addr == "" {
		t.Skip("FENCEDSQL_REDIS_ADDR not set")
	}
	const db = 14
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr, DB: db, MaxRetries: -1, ContextTimeoutEnabled: true})
	mine := []string{"token", "lock:rt28b-k", "queue:rt28b-k", "ticket", "fencedsql:token"}
	rdb.Del(ctx, mine...)
	t.Cleanup(func() { rdb.Del(context.Background(), mine...); rdb.Close() })

	const floor = 5_000_000_000_000_000_000
	code, out, errOut := lockfloor(t, "-backend", "redis", "-addr", "redis://"+addr+"/14", "-prefix", "", "-raise", "5000000000000000000")
	if code != exitOK {
		t.Fatalf("lockfloor: exit %d, stderr %q", code, errOut)
	}
	t.Logf("lockfloor -prefix \"\" -raise %d printed %q", uint64(floor), out)

	b := redislock.New(rdb, redislock.WithPrefix(""))
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	l, err := c.Acquire(ctx, "rt28b-k")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	c.Close(ctx)
	if l.Token() <= floor {
		t.Fatalf("lockfloor -prefix \"\" -raise %d exited 0, yet the backend with WithPrefix(\"\") granted token %d: "+
			"the raise went to another counter (fencedsql:token)", uint64(floor), l.Token())
	}
}

// TestEmptyPrefixRefusedWhereTheBackendRefusesIt (red-team rt28b F4): an explicit
// -prefix "" is the empty prefix, never "not given": etcd (whose WithPrefix refuses "")
// and the SQL backends (which take no prefix) refuse it as a usage error.
func TestEmptyPrefixRefusedWhereTheBackendRefusesIt(t *testing.T) {
	for _, args := range [][]string{
		{"-backend", "etcd", "-endpoints", "127.0.0.1:1", "-prefix", "", "-show"},
		{"-backend", "postgres", "-dsn", "postgres://127.0.0.1:1/x", "-prefix", "", "-show"},
	} {
		if code, _, errOut := lockfloor(t, args...); code != exitUsage {
			t.Errorf("lockfloor %q: exit %d (stderr %q), want %d", args, code, errOut, exitUsage)
		}
	}
}
