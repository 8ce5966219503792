package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// A lease table created by the previous release (schema version 1, no waiter table):
// the backend still grants (without a queue, warning once), and CreateTable upgrades the
// table in place, keeping the held lease and the token sequence; the queue is used then.
func TestUpgradeFromSchemaV1(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		t.Parallel()
		dsn := srv.newDSN(t)
		admin := srv.open(t, dsn)
		ctx := ctxT(t, 60*time.Second)
		for _, q := range sqllock.DDLv1(srv.dialect, "") {
			if _, err := admin.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		be, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		a := lockclient.New(be, lockclient.WithOwner("a"), lockclient.WithTTL(10*time.Second))
		defer a.Close(context.Background())
		la, err := a.Acquire(ctx, "k") // falls back to version 1's statements
		if err != nil {
			t.Fatalf("Acquire on a version 1 table: %v", err)
		}
		if _, err := a.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire of a held key on a version 1 table = %v, want ErrHeld", err)
		}
		// The upgrade, while the lease is held.
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
			t.Fatalf("CreateTable on a version 1 table: %v", err)
		}
		// A new backend uses the queue at once; the held lease is still held.
		be2, err := sqllock.New(srv.open(t, dsn))
		if err != nil {
			t.Fatal(err)
		}
		b := lockclient.New(be2, lockclient.WithOwner("b"), lockclient.WithTTL(10*time.Second))
		defer b.Close(context.Background())
		got := make(chan *lockclient.Lease, 1)
		go func() {
			lb, err := b.Acquire(ctx, "k")
			if err != nil {
				t.Errorf("Acquire after the upgrade: %v", err)
			}
			got <- lb
		}()
		waitFor(t, func() bool { return countWaiters(t, srv, admin, "k") == 1 })
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		lb := <-got
		if lb == nil {
			return
		}
		if lb.Token() <= la.Token() {
			t.Fatalf("token %d after %d: the sequence did not survive the upgrade", lb.Token(), la.Token())
		}
		if err := lb.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A waiter that died (its liveness lapsed: no refresh within its TTL) is skipped; one
// that is alive keeps its place: TryAcquire does not barge in ahead of it.
func TestDeadWaiterSkippedLiveWaiterNotOvertaken(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		t.Parallel()
		n := newNamespace(t, srv)
		admin := srv.open(t, n.dsn)
		ctx := ctxT(t, 60*time.Second)
		ttl := 2 * time.Second
		a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
		defer a.Close(context.Background())
		b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
		defer b.Close(context.Background())
		c := lockclient.New(n.Backend("c"), lockclient.WithOwner("c"), lockclient.WithTTL(ttl))
		defer c.Close(context.Background())
		la, err := a.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		// A waiter ahead of everyone whose process is gone: alive for 1.5s more.
		ins := `INSERT INTO fencedsql_locks_waiters (lock_key, waiter_id, session_id, owner, channel, alive_until)
VALUES ($1, 'dead:0', 'dead', 'dead', 'nobody', clock_timestamp() + interval '1500 milliseconds')`
		if srv.dialect == sqllock.MySQL {
			ins = `INSERT INTO fencedsql_locks_waiters (lock_key, waiter_id, session_id, owner, alive_until)
VALUES (?, 'dead:0', 'dead', 'dead', UTC_TIMESTAMP(6) + INTERVAL 1500000 MICROSECOND)`
		}
		if _, err := admin.ExecContext(ctx, ins, "k"); err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Time, 1)
		go func() {
			lb, err := b.Acquire(ctx, "k")
			if err != nil {
				t.Errorf("Acquire: %v", err)
				got <- time.Time{}
				return
			}
			got <- time.Now()
			time.Sleep(300 * time.Millisecond) // c tries meanwhile
			lb.Release(ctx)
		}()
		waitFor(t, func() bool { return countWaiters(t, srv, admin, "k") == 2 })
		released := time.Now()
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		// The key is free but b waits (behind the dead waiter): no barging.
		time.Sleep(200 * time.Millisecond)
		if _, err := c.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire with a live waiter queued = %v, want ErrHeld", err)
		}
		at := <-got
		if at.IsZero() {
			return
		}
		d := at.Sub(released)
		t.Logf("b granted %v after the release, behind a waiter that lapsed", d)
		if d < time.Second || d > 1500*time.Millisecond+ttl/4+time.Second {
			t.Fatalf("b granted %v after the release; the dead waiter lapsed 1.5s after it was queued", d)
		}
		if _, err := c.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire while b holds = %v", err)
		}
	})
}

// PostgreSQL: a release wakes only the first waiter. With 8 waiters of 8 Backends
// queued, a release is followed by one grant call (the first waiter's), not one per
// waiter: no herd.
func TestReleaseWakesOnlyTheNextWaiter(t *testing.T) {
	srv := servers[0]
	n := newNamespace(t, srv)
	admin := srv.open(t, n.dsn)
	ctx := ctxT(t, 60*time.Second)
	ttl := 20 * time.Second // waiters refresh every ttl/4: not during the test
	newClient := func(owner string) *lockclient.Client {
		c := lockclient.New(n.Backend(owner), lockclient.WithOwner(owner), lockclient.WithTTL(ttl))
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	h := newClient("holder")
	lh, err := h.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	const waiters = 8
	granted := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		c := newClient("w" + string(rune('a'+i)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := c.Acquire(ctx, "k")
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			granted <- i
			time.Sleep(500 * time.Millisecond)
			l.Release(ctx)
		}()
		waitFor(t, func() bool { return countWaiters(t, srv, admin, "k") == i+1 })
	}
	time.Sleep(time.Second) // every listener LISTENs, every waiter sleeps
	var calls atomic.Int64
	restore := sqllock.SetStatementHook(func(q string, args []any) {
		if strings.Contains(q, "_grant_v2") {
			calls.Add(1)
		}
	})
	if err := lh.Release(ctx); err != nil {
		restore()
		t.Fatal(err)
	}
	first := <-granted
	time.Sleep(200 * time.Millisecond)
	restore()
	if first != 0 {
		t.Fatalf("waiter %d granted first, want 0", first)
	}
	if c := calls.Load(); c != 1 {
		t.Fatalf("%d grant calls after one release with %d waiters, want 1 (only the next waiter woken)", c, waiters)
	}
	wg.Wait()
}

// countWaiters counts the live waiters of key in the default table's queue.
func countWaiters(t *testing.T, srv server, admin *sql.DB, key string) int {
	q := `SELECT count(*) FROM fencedsql_locks_waiters WHERE lock_key = $1 AND NOT gone`
	if srv.dialect == sqllock.MySQL {
		q = `SELECT COUNT(*) FROM fencedsql_locks_waiters WHERE lock_key = ? AND gone = 0`
	}
	var n int
	if err := admin.QueryRowContext(ctxT(t, 10*time.Second), q, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond for up to 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10s")
}
