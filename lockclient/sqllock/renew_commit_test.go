package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/internal/logtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// red-team rt41c F3: on MySQL/MariaDB a renewal or release sent as a plain statement is
// committed only on a session in autocommit outside a transaction. On a pool whose DSN
// says autocommit=0, or on a pooled connection the application left inside a START
// TRANSACTION, the server answered "1 row changed" and the client extended its lease
// (or took the key for released) while the change stayed uncommitted — to be rolled
// back when the connection went. Each case below renews and releases on such a pool
// and checks from a second pool that the lease's expiry really moved, that the row is
// really gone after the release, and that the key is free at once (no lock left on an
// idle connection).
func TestMySQLRenewalAndReleaseCommitted(t *testing.T) {
	srv := servers[1]
	if srv.dialect != sqllock.MySQL {
		t.Fatal("servers[1] is not MySQL")
	}
	withParams := func(t *testing.T, dsn string, params map[string]string) string {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		for k, v := range params {
			cfg.Params[k] = v
		}
		return cfg.FormatDSN()
	}
	cases := []struct {
		name string
		// open returns the lease pool of the holder; after is run on it after the grant.
		open  func(t *testing.T, dsn string) *sql.DB
		after func(t *testing.T, ctx context.Context, db *sql.DB)
		// stray, if not empty, is a table whose row the stray transaction inserted: the
		// renewal's START TRANSACTION commits it (documented).
		stray string
	}{
		{name: "AutocommitOff", open: func(t *testing.T, dsn string) *sql.DB {
			return srv.open(t, withParams(t, dsn, map[string]string{"autocommit": "0"}))
		}},
		{name: "CompletionTypeRelease", open: func(t *testing.T, dsn string) *sql.DB {
			// A COMMIT of the procedures without NO RELEASE cut the connection.
			return srv.open(t, withParams(t, dsn, map[string]string{"autocommit": "0", "completion_type": "2"}))
		}},
		{name: "StrayTransaction", open: func(t *testing.T, dsn string) *sql.DB {
			db := srv.open(t, dsn)
			db.SetMaxOpenConns(1) // the next statements get the connection left in the transaction
			return db
		}, after: func(t *testing.T, ctx context.Context, db *sql.DB) {
			// database/sql does not track a transaction begun by a statement: the pooled
			// connection goes back to the pool inside it.
			for _, q := range []string{"START TRANSACTION", "INSERT INTO sqllock_stray_tx (id) VALUES (1)"} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
		}, stray: "sqllock_stray_tx"},
		{name: "FencedPoolAutocommitOff", open: func(t *testing.T, dsn string) *sql.DB {
			db, err := sql.Open("fenced-mysql", withParams(t, dsn, map[string]string{"autocommit": "0"}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn, admin := srv.fresh(t, "")
			ctx := ctxT(t, 30*time.Second)
			if c.stray != "" {
				if _, err := admin.ExecContext(ctx, "CREATE TABLE "+c.stray+" (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
					t.Fatal(err)
				}
			}
			db := c.open(t, dsn)
			be, err := sqllock.New(db)
			if err != nil {
				t.Fatal(err)
			}
			ttl := 10 * time.Second
			a := locktest.OpenSession(t, be, "a", ttl)
			g, err := a.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if c.after != nil {
				c.after(t, ctx, db)
			}
			before := leaseExpiry(t, ctx, admin, "k")
			time.Sleep(300 * time.Millisecond)
			if err := a.Renew(ctx, g); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if after := leaseExpiry(t, ctx, admin, "k"); after-before < 200_000 {
				t.Errorf("expires_at seen from another pool moved by %dµs after a renewal 300ms later, want about 300000: "+
					"the renewal was acknowledged but not committed", after-before)
			}
			if c.stray != "" {
				var n int
				if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+c.stray).Scan(&n); err != nil || n != 1 {
					t.Errorf("rows of the stray transaction seen from another pool after the renewal = %d, %v; want 1 (committed by it)", n, err)
				}
			}
			if err := a.Release(ctx, g); err != nil {
				t.Fatalf("Release: %v", err)
			}
			var rows int
			if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM fencedsql_locks WHERE lock_key = 'k'").Scan(&rows); err != nil {
				t.Fatal(err)
			}
			if rows != 0 {
				t.Fatalf("the released lease's row is still seen from another pool: the release was acknowledged but not committed")
			}
			// Nothing of the release is left locked on the holder's idle connection.
			b := locktest.OpenSession(t, newBackend(t, srv, dsn), "b", ttl)
			bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := b.TryAcquire(bctx, "k"); err != nil {
				t.Fatalf("TryAcquire of the released key from another pool: %v", err)
			}
		})
	}
}

// A lease table created by the release before rt41c F3's fix has no
// <table>_renew_v2, _release_v2, _leave_v2 or _abandon_v2: CheckTable reports it as
// Outdated, naming them; renewals and releases keep working with the plain statements of that release
// (a warning, once, through the backend's logger) until CreateTable adds them, after
// which a renewal on a pool with autocommit=0 is committed.
func TestMySQLRenewalProceduresUpgraded(t *testing.T) {
	srv := servers[1]
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 30*time.Second)
	for _, p := range []string{"fencedsql_locks_renew_v2", "fencedsql_locks_release_v2", "fencedsql_locks_leave_v2", "fencedsql_locks_abandon_v2"} {
		if _, err := admin.ExecContext(ctx, "DROP PROCEDURE "+p); err != nil {
			t.Fatal(err)
		}
	}
	rec := logtest.New()
	be, err := sqllock.New(srv.open(t, dsn), sqllock.WithLogger(rec.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	var se *sqllock.SchemaError
	if err := be.CheckTable(ctx); !errors.As(err, &se) || !se.Outdated ||
		!strings.Contains(err.Error(), "fencedsql_locks_renew_v2") || !strings.Contains(err.Error(), "fencedsql_locks_release_v2") {
		t.Fatalf("CheckTable without the renewal procedures = %v, want an Outdated *SchemaError naming them", err)
	}
	ttl := 10 * time.Second
	a := locktest.OpenSession(t, be, "a", ttl)
	for range 2 {
		g, err := a.TryAcquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Renew(ctx, g); err != nil {
			t.Fatalf("Renew on a table without the renewal procedure: %v", err)
		}
		if err := a.Release(ctx, g); err != nil {
			t.Fatalf("Release on a table without the release procedure: %v", err)
		}
	}
	if got := withoutFlushLogWarning(rec.Messages()); len(got) != 1 || !strings.Contains(got[0], "procedures that commit renewals") {
		t.Fatalf("the backend's logger got %q, want one warning about the missing procedures", got)
	}

	if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
		t.Fatal(err)
	}
	if err := be.CheckTable(ctx); err != nil {
		t.Fatalf("CheckTable after CreateTable: %v", err)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"autocommit": "0"}
	off, err := sqllock.New(srv.open(t, cfg.FormatDSN()))
	if err != nil {
		t.Fatal(err)
	}
	b := locktest.OpenSession(t, off, "b", ttl)
	g, err := b.TryAcquire(ctx, "k2")
	if err != nil {
		t.Fatal(err)
	}
	before := leaseExpiry(t, ctx, admin, "k2")
	time.Sleep(300 * time.Millisecond)
	if err := b.Renew(ctx, g); err != nil {
		t.Fatal(err)
	}
	if after := leaseExpiry(t, ctx, admin, "k2"); after-before < 200_000 {
		t.Fatalf("expires_at moved by %dµs after the upgrade, want about 300000", after-before)
	}
}

// newBackend returns a backend on a new pool of dsn (autocommit, no proxy).
func newBackend(t *testing.T, srv server, dsn string) *sqllock.Backend {
	t.Helper()
	b, err := sqllock.New(srv.open(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// leaseExpiry reads key's expires_at from the default MySQL lease table through db, in
// microseconds since 2000-01-01 (comparable between two reads).
func leaseExpiry(t *testing.T, ctx context.Context, db *sql.DB, key string) int64 {
	t.Helper()
	var us int64
	if err := db.QueryRowContext(ctx, "SELECT TIMESTAMPDIFF(MICROSECOND, '2000-01-01', expires_at) FROM fencedsql_locks WHERE lock_key = ?", key).Scan(&us); err != nil {
		t.Fatal(err)
	}
	return us
}

// The same class in the grant procedure (red-team rt41c F3): a waiter's queue join is
// written before the procedure's grant transaction, and on a pool with autocommit=0 it
// stayed uncommitted, invisible to the other clients (and locked on the idle
// connection) while the waiter was not first. Every path of <table>_grant_v2 now
// commits: the waiter is in the queue as others see it, and is granted after the
// release; a waiter that gives up leaves the queue by <table>_leave_v2, committed too.
func TestMySQLQueuedWaiterCommittedWithoutAutocommit(t *testing.T) {
	srv := servers[1]
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 30*time.Second)
	ttl := 10 * time.Second
	a := locktest.OpenSession(t, newBackend(t, srv, dsn), "a", ttl)
	g, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"autocommit": "0"}
	off, err := sqllock.New(srv.open(t, cfg.FormatDSN()))
	if err != nil {
		t.Fatal(err)
	}
	b := lockclient.New(off, lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
	t.Cleanup(func() { b.Close(context.Background()) })
	got := make(chan error, 1)
	go func() {
		l, err := b.Acquire(ctx, "k")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, func() bool { return countWaiters(t, srv, admin, "k") == 1 })
	// A second waiter, on a pool of its own with autocommit=0 (no later call there would
	// commit for it), gives up: its leaving is committed too.
	offC, err := sqllock.New(srv.open(t, cfg.FormatDSN()))
	if err != nil {
		t.Fatal(err)
	}
	c := lockclient.New(offC, lockclient.WithOwner("c"), lockclient.WithTTL(ttl))
	t.Cleanup(func() { c.Close(context.Background()) })
	cctx, cancel := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() {
		_, err := c.Acquire(cctx, "k")
		left <- err
	}()
	waitFor(t, func() bool { return countWaiters(t, srv, admin, "k") == 2 })
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire of the waiter that gave up = %v, want context.Canceled", err)
	}
	for deadline := time.Now().Add(3 * time.Second); countWaiters(t, srv, admin, "k") != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter that gave up is still in the queue as the other pools see it 3s later: its leaving was not committed")
		}
	}
	if err := a.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the queued waiter on a pool with autocommit=0: %v", err)
	}
}
