package main

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// retireRefusesGrants checks -retire against a service (red-team rt37c F4): it prints a
// number at least every token granted before; afterwards every grant, by a Client that
// was already running and by a new one, fails with ErrRetired (at once, not retried),
// -raise fails, and -show and a second -retire print the same number. -show -live, the
// failover hook's read, prints LastToken before the retirement and, after it, prints
// nothing and fails naming the retirement and the hook's configuration (red-team rt42c
// F6).
func retireRefusesGrants(t *testing.T, newBackend func() lockclient.Backend, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := lockclient.New(newBackend(), lockclient.WithTTL(2*time.Second))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	if n := number(t, append(args, "-show", "-live")...); n < l.Token() {
		t.Fatalf("-show -live printed %d after token %d was granted", n, l.Token())
	}
	last := number(t, append(args, "-retire")...)
	if last < l.Token() {
		t.Fatalf("-retire printed %d after token %d was granted", last, l.Token())
	}
	fresh := lockclient.New(newBackend(), lockclient.WithTTL(2*time.Second))
	defer fresh.Close(context.Background())
	for _, cl := range []*lockclient.Client{c, fresh} {
		for _, name := range []string{"k", "other"} {
			if l, err := cl.Acquire(ctx, name); !errors.Is(err, lockclient.ErrRetired) || !errors.Is(err, lockclient.ErrInvalidConfig) {
				if l != nil {
					t.Fatalf("a retired service granted %q token %d (last %d)", name, l.Token(), last)
				}
				t.Fatalf("Acquire(%q) on a retired service: %v, want ErrRetired", name, err)
			}
		}
	}
	if code, out, errOut := lockfloor(t, append(args, "-raise", strconv.FormatUint(last+1000, 10))...); code != exitFailed || out != "" || !strings.Contains(errOut, "retired") {
		t.Fatalf("-raise on a retired service: exit %d, stdout %q, stderr %q; want 1 naming the retirement", code, out, errOut)
	}
	if n := number(t, append(args, "-show")...); n != last {
		t.Fatalf("-show after -retire printed %d, want the last token %d", n, last)
	}
	if n := number(t, append(args, "-retire")...); n != last {
		t.Fatalf("a second -retire printed %d, want the last token %d", n, last)
	}
	code, out, errOut := lockfloor(t, append(args, "-show", "-live")...)
	if code != exitFailed || out != "" || !strings.Contains(errOut, "retired (its last token "+strconv.FormatUint(last, 10)+")") ||
		!strings.Contains(errOut, "FENCEDSQL_LOCKFLOOR_ARGS") {
		t.Fatalf("-show -live on a retired service: exit %d, stdout %q, stderr %q; want 1, nothing printed, the retirement named", code, out, errOut)
	}
}

func TestRetireEtcd(t *testing.T) {
	cluster := etcdtest.StartSingle(t)
	prefix := "/lockfloor-retire/"
	cli := cluster.Client(t)
	retireRefusesGrants(t, func() lockclient.Backend { return etcdlock.New(cli, etcdlock.WithPrefix(prefix)) },
		"-backend", "etcd", "-endpoints", strings.Join(cluster.Endpoints(), ","), "-prefix", prefix)
}

func TestRetireRedis(t *testing.T) {
	addr, prefix := testdb.Redis(t)
	rdb := newRedis(t, addr)
	retireRefusesGrants(t, func() lockclient.Backend { return redislock.New(rdb, redislock.WithPrefix(prefix)) },
		"-backend", "redis", "-addr", addr, "-prefix", prefix)
}

func TestRetirePostgres(t *testing.T) {
	testRetireSQL(t, "postgres", "pgx", sqllock.Postgres, testdb.Postgres(t))
}

func TestRetireMySQL(t *testing.T) {
	testRetireSQL(t, "mysql", "mysql", sqllock.MySQL, testdb.MySQL(t))
}

// testRetireSQL: -retire on a sqllock lease table; a CreateTable after it (a process
// that ensures its schema at start) does not bring the service back.
func testRetireSQL(t *testing.T, kind, driver string, d sqllock.Dialect, dsn string) {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const table = "lockfloor_retire"
	if err := sqllock.CreateTable(ctx, db, d, table); err != nil {
		t.Fatal(err)
	}
	newBackend := func() lockclient.Backend {
		if err := sqllock.CreateTable(ctx, db, d, table); err != nil {
			t.Fatal(err)
		}
		b, err := sqllock.New(db, sqllock.WithDialect(d), sqllock.WithTable(table))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	retireRefusesGrants(t, newBackend, "-backend", kind, "-dsn", dsn, "-table", table)
}
