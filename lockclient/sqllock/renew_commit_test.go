package sqllock_test

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// red-team rt41c F3: on MySQL/MariaDB the renewal is a plain UPDATE sent in autocommit, and the
// backend never checks that its session is in autocommit. On a session with
// autocommit=0 (a DSN parameter, or a SET autocommit left on a pooled connection of a
// shared *sql.DB) the renewal's UPDATE reports a changed row, Renew returns nil and the
// client extends its local deadline by a TTL, but the new expires_at is never committed:
// when the connection goes (recycled, closed, broken) the server rolls it back and the
// lease expires at the old time, while its client still trusts it (G7).
func TestMySQLRenewalCommittedWithoutAutocommit(t *testing.T) {
	srv := servers[1]
	n := newNamespace(t, srv)
	ctx := ctxT(t, 30*time.Second)
	ttl := 2 * time.Second
	dbA := n.db("a", map[string]string{"autocommit": "0"})
	beA, err := sqllock.New(dbA)
	if err != nil {
		t.Fatal(err)
	}
	a := locktest.OpenSession(t, beA, "a", ttl)
	b := locktest.OpenSession(t, n.backend("b", nil), "b", ttl)
	start := time.Now()
	g, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl * 3 / 4)
	sent := time.Now()
	if err := a.Renew(ctx, g); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	// The client now trusts the lease until sent+TTL (minus its margin). Its pool's
	// connections go (SetConnMaxLifetime, a restart of the pool, a broken connection).
	dbA.SetMaxIdleConns(0)
	dbA.SetConnMaxLifetime(time.Nanosecond)
	_ = dbA.PingContext(ctx)
	time.Sleep(time.Until(start.Add(ttl + 300*time.Millisecond)))
	if time.Since(sent) >= ttl*9/10 {
		t.Skip("too slow to judge")
	}
	gb, err := b.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire %v after a's renewal succeeded (TTL %v) = (token %d, %v), want ErrHeld: "+
			"a's renewal, sent on a session with autocommit=0, was acknowledged but never committed", time.Since(sent).Round(time.Millisecond), ttl, gb.Token, err)
	}
}

// red-team rt41c F3, stray-transaction form on MySQL/MariaDB: a pooled connection of a shared
// *sql.DB left inside a transaction (db.Exec("START TRANSACTION"), which database/sql
// does not track) runs the renewal's UPDATE in it: acknowledged, never committed.
func TestMySQLRenewalCommittedInsideStrayTransaction(t *testing.T) {
	srv := servers[1]
	n := newNamespace(t, srv)
	ctx := ctxT(t, 30*time.Second)
	ttl := 2 * time.Second
	dbA := n.db("a", nil)
	dbA.SetMaxOpenConns(1)
	beA, err := sqllock.New(dbA)
	if err != nil {
		t.Fatal(err)
	}
	a := locktest.OpenSession(t, beA, "a", ttl)
	b := locktest.OpenSession(t, n.backend("b", nil), "b", ttl)
	start := time.Now()
	g, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dbA.ExecContext(ctx, "START TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl * 3 / 4)
	sent := time.Now()
	if err := a.Renew(ctx, g); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	dbA.SetMaxIdleConns(0)
	dbA.SetConnMaxLifetime(time.Nanosecond)
	_ = dbA.PingContext(ctx)
	time.Sleep(time.Until(start.Add(ttl + 300*time.Millisecond)))
	if time.Since(sent) >= ttl*9/10 {
		t.Skip("too slow to judge")
	}
	gb, err := b.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire %v after a's renewal succeeded (TTL %v) = (token %d, %v), want ErrHeld: "+
			"a's renewal ran inside a transaction left open on the pooled connection, was acknowledged and never committed", time.Since(sent).Round(time.Millisecond), ttl, gb.Token, err)
	}
}

// red-team rt41c F3 through a fenced-mysql pool (the lease table in the fenced database): the
// wrapper refuses a guarded write on a session with autocommit=0, but the lease table's
// renewal is no guarded write and is acknowledged uncommitted.
func TestMySQLFencedPoolRenewalCommittedWithAutocommitOff(t *testing.T) {
	srv := servers[1]
	dsn, _ := srv.fresh(t, "")
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["autocommit"] = "0"
	dbA, err := sql.Open("fenced-mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbA.Close() })
	dbB, err := sql.Open("fenced-mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dbB.Close() })
	ctx := ctxT(t, 30*time.Second)
	ttl := 2 * time.Second
	beA, err := sqllock.New(dbA)
	if err != nil {
		t.Fatal(err)
	}
	beB, err := sqllock.New(dbB)
	if err != nil {
		t.Fatal(err)
	}
	a := locktest.OpenSession(t, beA, "a", ttl)
	b := locktest.OpenSession(t, beB, "b", ttl)
	start := time.Now()
	g, err := a.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl * 3 / 4)
	sent := time.Now()
	if err := a.Renew(ctx, g); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	dbA.SetMaxIdleConns(0)
	dbA.SetConnMaxLifetime(time.Nanosecond)
	_ = dbA.PingContext(ctx)
	time.Sleep(time.Until(start.Add(ttl + 300*time.Millisecond)))
	if time.Since(sent) >= ttl*9/10 {
		t.Skip("too slow to judge")
	}
	gb, err := b.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire %v after a's renewal succeeded (TTL %v) = (token %d, %v), want ErrHeld: "+
			"a's renewal, sent through a fenced-mysql pool with autocommit=0, was acknowledged but never committed", time.Since(sent).Round(time.Millisecond), ttl, gb.Token, err)
	}
}
