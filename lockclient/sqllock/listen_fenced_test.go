package sqllock_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/fencedsql/fencedsql/dialects/mysql"    // registers fenced-mysql
	_ "github.com/fencedsql/fencedsql/dialects/postgres" // registers fenced-pgx
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// The lease table can live in the database the application writes through fencedsql,
// over the same fenced pool. On a "fenced-pgx" pool the backend still recognises pgx
// (through fencedsql.UnwrapDriver's Unwrap method) and its listener reaches pgx's
// connection through the wrapper (fencedsql.Unwrap's Raw method): a release wakes a
// waiter by NOTIFY, long before the 5s poll could.
func TestFencedPgxPoolListens(t *testing.T) {
	dsn, _ := servers[0].fresh(t, "")
	// The guarded table exists: a listed table that does not fails the pool's first use.
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE accounts (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db, err := sql.Open("fenced-pgx", withParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	be, err := sqllock.New(db, sqllock.WithPollInterval(5*time.Second, 5*time.Second))
	if err != nil {
		t.Fatalf("sqllock.New over a fenced-pgx pool: %v", err)
	}
	if be.Dialect() != sqllock.Postgres {
		t.Fatalf("dialect %v", be.Dialect())
	}
	ctx := ctxT(t, 30*time.Second)
	ttl := 20 * time.Second
	a := lockclient.New(be, lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
	defer a.Close(context.Background())
	b := lockclient.New(be, lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
	defer b.Close(context.Background())
	for round := range 2 {
		la, err := a.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			lb, err := b.Acquire(ctx, "k")
			if err == nil {
				err = lb.Release(ctx)
			}
			got <- err
		}()
		time.Sleep(700 * time.Millisecond) // b is waiting, its listener LISTENs
		released := time.Now()
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
			d := time.Since(released)
			t.Logf("round %d: waiter granted %v after the release", round, d)
			if d > time.Second {
				t.Fatalf("round %d: waiter granted %v after the release: not woken by NOTIFY (polls every 5s)", round, d)
			}
		case <-ctx.Done():
			t.Fatal("waiter not granted")
		}
	}
}

// A "fenced-mysql" pool is recognised as MySQL without WithDialect.
func TestFencedMySQLPoolDetected(t *testing.T) {
	dsn, _ := servers[1].fresh(t, "")
	db, err := sql.Open("fenced-mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	be, err := sqllock.New(db)
	if err != nil {
		t.Fatalf("sqllock.New over a fenced-mysql pool: %v", err)
	}
	if be.Dialect() != sqllock.MySQL {
		t.Fatalf("dialect %v", be.Dialect())
	}
	c := lockclient.New(be, lockclient.WithOwner("a"), lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())
	ctx := ctxT(t, 30*time.Second)
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// withParam adds a name=value parameter to a pgx DSN, URL or keyword/value.
func withParam(dsn, kv string) string {
	switch {
	case !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return dsn + " " + kv
	case strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}
