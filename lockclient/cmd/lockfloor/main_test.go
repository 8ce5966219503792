package main

import (
	"bytes"
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// lockfloor runs the command in-process and returns its exit status, stdout and stderr.
func lockfloor(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// number runs lockfloor, which must succeed and print one bare number.
func number(t *testing.T, args ...string) uint64 {
	t.Helper()
	code, out, errOut := lockfloor(t, args...)
	if code != exitOK {
		t.Fatalf("lockfloor %q: exit %d, stderr %q", args, code, errOut)
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(out, "\n"), 10, 64)
	if err != nil || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("lockfloor %q printed %q, want a bare number", args, out)
	}
	return n
}

// showRaiseGrant checks the command against a service: -show bounds the tokens granted
// so far, -raise lifts the next grant above the floor and prints a LastToken at least
// the floor, a lower -raise changes nothing.
func showRaiseGrant(t *testing.T, backend lockclient.Backend, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := lockclient.New(backend, lockclient.WithTTL(2*time.Second))
	defer c.Close(context.Background())
	grant := func() uint64 {
		l, err := c.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return l.Token()
	}
	first := grant()
	shown := number(t, append(args, "-show")...)
	if shown < first {
		t.Fatalf("-show printed %d after token %d was granted", shown, first)
	}
	floor := shown + 1_000_000
	raised := number(t, append(args, "-raise", strconv.FormatUint(floor, 10))...)
	if raised < floor {
		t.Fatalf("-raise %d printed LastToken %d", floor, raised)
	}
	if tok := grant(); tok <= floor {
		t.Fatalf("token %d after -raise %d", tok, floor)
	}
	before := number(t, append(args, "-show")...)
	after := number(t, append(args, "-raise", "5")...)
	if after < before || after-before > 1000 {
		t.Fatalf("-raise 5 below LastToken %d printed %d", before, after)
	}
}

// failoverJump checks -failover against a service (red-team rt42f F1): it prints a
// LastToken at least the last token + the margin (defaultMargin when -margin is left
// out) and the next grant is above it; -margin 0 prints LastToken unchanged.
func failoverJump(t *testing.T, backend lockclient.Backend, defaultMargin uint64, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := lockclient.New(backend, lockclient.WithTTL(2*time.Second))
	defer c.Close(context.Background())
	before := number(t, append(args, "-show")...)
	if got := number(t, append(args, "-failover", "-margin", "0")...); got < before || got-before > 1000 {
		t.Fatalf("-failover -margin 0 printed %d, -show %d", got, before)
	}
	jumped := number(t, append(args, "-failover")...)
	if jumped < before+defaultMargin || defaultMargin == 0 && jumped-before > 1000 {
		t.Fatalf("-failover printed %d after -show %d; want the default margin %d", jumped, before, defaultMargin)
	}
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if l.Token() <= jumped {
		t.Fatalf("token %d granted after -failover printed %d", l.Token(), jumped)
	}
	if got := number(t, append(args, "-failover", "-margin", "1000")...); got < l.Token()+1000 {
		t.Fatalf("-failover -margin 1000 printed %d after token %d", got, l.Token())
	}
	// -at-least (red-team rt59c F2): the jump starts at the highest bound given when
	// that is above the service's last token (a raise its token source forgot).
	bound := number(t, append(args, "-show")...) + 1_000_000
	got := number(t, append(args, "-failover", "-margin", "1000", "-at-least", strconv.FormatUint(bound, 10), "-at-least", "5")...)
	if got < bound+1000 || got > bound+2000 {
		t.Fatalf("-failover -margin 1000 -at-least %d -at-least 5 printed %d; want %d + 1000", bound, got, bound)
	}
	l2, err := c.Acquire(ctx, "k2")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release(ctx)
	if l2.Token() <= got {
		t.Fatalf("token %d granted after -failover -at-least printed %d", l2.Token(), got)
	}
}

func TestEtcd(t *testing.T) {
	cluster := etcdtest.StartSingle(t)
	prefix := "/lockfloor-test/"
	b := etcdlock.New(cluster.Client(t), etcdlock.WithPrefix(prefix))
	showRaiseGrant(t, b, "-backend", "etcd", "-endpoints", strings.Join(cluster.Endpoints(), ","), "-prefix", prefix)
	failoverJump(t, b, 0, "-backend", "etcd", "-endpoints", strings.Join(cluster.Endpoints(), ","), "-prefix", prefix)
}

func TestRedis(t *testing.T) {
	addr, prefix := testdb.Redis(t)
	b := redislock.New(newRedis(t, addr), redislock.WithPrefix(prefix))
	showRaiseGrant(t, b, "-backend", "redis", "-addr", addr, "-prefix", prefix)
}

func TestPostgres(t *testing.T) { testSQL(t, "postgres", "pgx", sqllock.Postgres, testdb.Postgres(t)) }
func TestMySQL(t *testing.T)    { testSQL(t, "mysql", "mysql", sqllock.MySQL, testdb.MySQL(t)) }

func testSQL(t *testing.T, kind, driver string, d sqllock.Dialect, dsn string) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const table = "lockfloor_leases"
	if err := sqllock.CreateTable(ctx, db, d, table); err != nil {
		t.Fatal(err)
	}
	b, err := sqllock.New(db, sqllock.WithDialect(d), sqllock.WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-backend", kind, "-dsn", dsn, "-table", table}
	if _, ok := any(b).(lockclient.FloorRaiser); !ok {
		// This build's sqllock has no floor: the command says so and fails.
		code, _, errOut := lockfloor(t, append(args, "-show")...)
		if code != exitFailed || !strings.Contains(errOut, "no token floor") {
			t.Fatalf("-show on a backend without a floor: exit %d, stderr %q", code, errOut)
		}
		return
	}
	showRaiseGrant(t, b, args...)
	failoverJump(t, b, lockclient.DefaultFailoverMargin, args...)
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-backend", "etcd", "-endpoints", "x:1"},                                   // neither -show nor -raise
		{"-backend", "etcd", "-endpoints", "x:1", "-show", "-raise", "3"},           // both
		{"-backend", "etcd", "-endpoints", "x:1", "-show", "-retire"},               // both
		{"-backend", "etcd", "-endpoints", "x:1", "-raise", "3", "-retire"},         // both
		{"-backend", "etcd", "-endpoints", "x:1", "-raise", "-3"},                   // not a token
		{"-backend", "etcd", "-addr", "x:1", "-show"},                               // wrong address flag
		{"-backend", "redis", "-endpoints", "x:1", "-show"},                         // wrong address flag
		{"-backend", "postgres", "-dsn", "postgres://x/y", "-prefix", "p", "-show"}, // prefix is not for SQL
		{"-backend", "zookeeper", "-show"},
		{"-backend", "etcd", "-endpoints", "x:1", "-show", "extra"},
		{"-backend", "etcd", "-endpoints", "x:1", "-live"},                         // -live only with -show or -failover
		{"-backend", "etcd", "-endpoints", "x:1", "-raise", "3", "-live"},          // -live only with -show or -failover
		{"-backend", "etcd", "-endpoints", "x:1", "-retire", "-live"},              // -live only with -show or -failover
		{"-backend", "etcd", "-endpoints", "x:1", "-show", "-failover"},            // both
		{"-backend", "etcd", "-endpoints", "x:1", "-show", "-margin", "5"},         // -margin without -failover
		{"-backend", "etcd", "-endpoints", "x:1", "-failover", "-margin", "-5"},    // not a number
		{"-backend", "etcd", "-endpoints", "x:1", "-failover", "-margin", "2^32"},  // not a number
		{"-backend", "etcd", "-endpoints", "x:1", "-show", "-at-least", "5"},       // -at-least without -failover
		{"-backend", "etcd", "-endpoints", "x:1", "-failover", "-at-least", "-5"},  // not a token
		{"-backend", "etcd", "-endpoints", "x:1", "-failover", "-at-least", "1e9"}, // not a token
	} {
		if code, out, errOut := lockfloor(t, args...); code != exitUsage || out != "" || errOut == "" {
			t.Errorf("lockfloor %q: exit %d, stdout %q, stderr %q; want usage error (2) on stderr only", args, code, out, errOut)
		}
	}
}

// A password in the DSN or the Redis URL never appears in the output, in any failure.
func TestPasswordNeverPrinted(t *testing.T) {
	const pw = "S3cr3t-pw"
	for _, args := range [][]string{
		{"-backend", "postgres", "-dsn", "postgres://app:" + pw + "@127.0.0.1:1/db?connect_timeout=1"},
		{"-backend", "postgres", "-dsn", "host=127.0.0.1 port=1 user=app password=" + pw + " connect_timeout=1"},
		{"-backend", "mysql", "-dsn", "app:" + pw + "@tcp(127.0.0.1:1)/db?timeout=1s"},
		{"-backend", "redis", "-addr", "redis://:" + pw + "@127.0.0.1:1/0"},
		{"-backend", "redis", "-addr", "redis://:" + pw + "@127.0.0.1:1/notadb"},
	} {
		for _, op := range [][]string{{"-show"}, {"-raise", "10"}} {
			a := append(append(append([]string{}, args...), op...), "-timeout", "3s")
			code, out, errOut := lockfloor(t, a...)
			if code != exitFailed || out != "" {
				t.Errorf("lockfloor %q against nothing: exit %d, stdout %q; want 1 and no output", args, code, out)
			}
			if strings.Contains(errOut, pw) || errOut == "" {
				t.Errorf("lockfloor %q: stderr %q shows the password (or nothing)", args, errOut)
			}
		}
	}
}

func newRedis(t *testing.T, addr string) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}
