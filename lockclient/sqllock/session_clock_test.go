package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// red-team rt41c F1: on MySQL/MariaDB the lease table's expiry is judged by UTC_TIMESTAMP(6),
// which follows the session's @@timestamp (settable by any session, no privilege; a
// DSN parameter timestamp=… or a stray SET timestamp on a pooled connection). A
// backend whose connections carry a shifted @@timestamp judges expiry by that clock,
// not the server's: a live lease of another holder looks expired (a second grant while
// the first holder's lease is still valid), and a grant it makes expires at once for
// everybody else while its own client trusts it for a TTL (G7).
func TestMySQLSessionTimestampDoesNotJudgeExpiry(t *testing.T) {
	srv := servers[1]
	if srv.dialect != sqllock.MySQL {
		t.Fatal("servers[1] is not MySQL")
	}
	ttl := 5 * time.Second
	ts := func(d time.Duration) map[string]string {
		return map[string]string{"timestamp": strconv.FormatInt(time.Now().Add(d).Unix(), 10)}
	}

	t.Run("FutureSessionClockTakesLiveLease", func(t *testing.T) {
		n := newNamespace(t, srv)
		ctx := ctxT(t, 30*time.Second)
		a := locktest.OpenSession(t, n.backend("a", nil), "a", ttl)
		b := locktest.OpenSession(t, n.backend("b", ts(time.Hour)), "b", ttl)
		if _, err := a.TryAcquire(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		g, err := b.TryAcquire(ctx, "k")
		if !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire of a lease just granted (TTL %v) from a session whose @@timestamp is an hour ahead = (token %d, %v), want ErrHeld: "+
				"the lease table's expiry follows the session's clock, not the server's", ttl, g.Token, err)
		}
	})

	t.Run("PastSessionClockGrantExpiresAtOnce", func(t *testing.T) {
		n := newNamespace(t, srv)
		ctx := ctxT(t, 30*time.Second)
		a := locktest.OpenSession(t, n.backend("a", ts(-time.Hour)), "a", ttl)
		b := locktest.OpenSession(t, n.backend("b", nil), "b", ttl)
		if _, err := a.TryAcquire(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		g, err := b.TryAcquire(ctx, "k")
		if !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire of a lease just granted (TTL %v) to a session whose @@timestamp is an hour behind = (token %d, %v), want ErrHeld: "+
				"the grant's expires_at was computed from the session's clock, so the lease expired at the service while its client trusts it for a TTL (G7)", ttl, g.Token, err)
		}
	})
}

// red-team rt41c F1, through a fenced-mysql pool (the lease table in the fenced database): the
// wrapper refuses a guarded write on a session whose clock is set by hand, but the
// lease table's statements are not guarded writes and pass on such a session.
func TestMySQLFencedPoolSessionTimestampDoesNotJudgeExpiry(t *testing.T) {
	dsn, _ := servers[1].fresh(t, "")
	open := func(params map[string]string) *sql.DB {
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
		db, err := sql.Open("fenced-mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	ctx := ctxT(t, 30*time.Second)
	ttl := 5 * time.Second
	mk := func(owner string, db *sql.DB) *lockclient.Client {
		be, err := sqllock.New(db)
		if err != nil {
			t.Fatal(err)
		}
		c := lockclient.New(be, lockclient.WithOwner(owner), lockclient.WithTTL(ttl))
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	a := mk("a", open(nil))
	b := mk("b", open(map[string]string{"timestamp": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}))
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrHeld) {
		tok := uint64(0)
		if lb != nil {
			tok = lb.Token()
		}
		t.Fatalf("TryAcquire over a fenced-mysql pool whose session clock is an hour ahead, while a holds a live lease (token %d, TTL %v) = (token %d, %v), want ErrHeld "+
			"(or a SessionError, as the wrapper gives a guarded write on such a session)", la.Token(), ttl, tok, err)
	}
}

// red-team rt41c F2: on PostgreSQL the lease table's statements (renew, release) and its
// PL/pgSQL routines (grant, waiters) call clock_timestamp() unqualified and the
// routines pin no search_path: a session whose search_path puts a schema holding a
// function clock_timestamp() before pg_catalog judges expiry by that function, not by
// the server's clock (the PostgreSQL form of F1).
func TestPostgresSearchPathDoesNotChooseClock(t *testing.T) {
	srv := servers[0]
	if srv.dialect != sqllock.Postgres {
		t.Fatal("servers[0] is not PostgreSQL")
	}
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 30*time.Second)
	for _, q := range []string{
		`CREATE SCHEMA sqllock_shadow_clk`,
		`CREATE FUNCTION sqllock_shadow_clk.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT pg_catalog.clock_timestamp() + interval '1 hour' $$`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	g := netproxy.NewGroup(srv.addr(t, dsn))
	t.Cleanup(g.Close)
	n := &namespace{Group: g, t: t, srv: srv, dsn: dsn}
	ttl := 5 * time.Second
	a := locktest.OpenSession(t, n.backend("a", nil), "a", ttl)
	b := locktest.OpenSession(t, n.backend("b", map[string]string{"search_path": "sqllock_shadow_clk,public,pg_catalog"}), "b", ttl)
	if _, err := a.TryAcquire(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	gb, err := b.TryAcquire(ctx, "k")
	if !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire of a lease just granted (TTL %v) from a session whose search_path resolves clock_timestamp() to a function an hour ahead = (token %d, %v), want ErrHeld: "+
			"the lease table's expiry follows a function the session chose, not the server's clock", ttl, gb.Token, err)
	}
}

// installOld replaces the lease table's routines by those of the release before the
// fix of red-team rt41c F1/F2 (session clock on MySQL, unqualified clock_timestamp()
// on PostgreSQL), as a table created by that release has them.
func installOld(t *testing.T, ctx context.Context, srv server, admin *sql.DB) {
	t.Helper()
	ddl, err := sqllock.DDL(srv.dialect, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ddl {
		switch {
		case srv.dialect == sqllock.MySQL && strings.HasPrefix(s, "CREATE PROCEDURE") && !strings.Contains(s, "_grant_v"):
			// That release had only the grant procedures (red-team rt41c F3).
			name := s[len("CREATE PROCEDURE "):strings.Index(s, "(")]
			s = "DROP PROCEDURE " + name
		case srv.dialect == sqllock.MySQL && strings.HasPrefix(s, "CREATE PROCEDURE"):
			s = strings.ReplaceAll(s, "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00')", "UTC_TIMESTAMP(6)")
			s = strings.Replace(s, "; rev 6'", "; rev 2'", 1)
			s = strings.Replace(s, "0 if held; rev 4'", "0 if held'", 1)
			s = strings.Replace(s, "CREATE PROCEDURE", "CREATE OR REPLACE PROCEDURE", 1)
		case srv.dialect == sqllock.Postgres && strings.HasPrefix(s, "CREATE OR REPLACE FUNCTION"):
			s = strings.ReplaceAll(s, "pg_catalog.clock_timestamp()", "clock_timestamp()")
		default:
			continue
		}
		if _, err := admin.ExecContext(ctx, s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
}

// The routines of a table created before the fix of red-team rt41c F1/F2 are reported
// by CheckTable as outdated and replaced by CreateTable, after which a shifted session
// clock (MySQL) or a shadowing clock_timestamp() (PostgreSQL) no longer judges expiry.
func TestSessionClockRoutinesUpgraded(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 30*time.Second)
		params := map[string]string{"timestamp": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}
		if srv.dialect == sqllock.Postgres {
			for _, q := range []string{
				`CREATE SCHEMA sqllock_upg_clk`,
				`CREATE FUNCTION sqllock_upg_clk.clock_timestamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT pg_catalog.clock_timestamp() + interval '1 hour' $$`,
			} {
				if _, err := admin.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			params = map[string]string{"search_path": "sqllock_upg_clk,public,pg_catalog"}
		}
		installOld(t, ctx, srv, admin)
		g := netproxy.NewGroup(srv.addr(t, dsn))
		t.Cleanup(g.Close)
		n := &namespace{Group: g, t: t, srv: srv, dsn: dsn}
		ttl := 5 * time.Second
		beA := n.backend("a", nil)
		a := locktest.OpenSession(t, beA, "a", ttl)
		b := locktest.OpenSession(t, n.backend("b", params), "b", ttl)
		if _, err := a.TryAcquire(ctx, "old"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.TryAcquire(ctx, "old"); err != nil {
			t.Fatalf("the old routines were not installed (the shifted clock did not take a live lease): %v", err)
		}
		var se *sqllock.SchemaError
		if err := beA.CheckTable(ctx); !errors.As(err, &se) || !se.Outdated {
			t.Fatalf("CheckTable with the routines of the earlier release = %v, want an Outdated *SchemaError", err)
		}
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, ""); err != nil {
			t.Fatal(err)
		}
		if err := beA.CheckTable(ctx); err != nil {
			t.Fatalf("CheckTable after CreateTable: %v", err)
		}
		if _, err := a.TryAcquire(ctx, "new"); err != nil {
			t.Fatal(err)
		}
		if gb, err := b.TryAcquire(ctx, "new"); !errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire of a live lease with a shifted clock after the upgrade = (token %d, %v), want ErrHeld", gb.Token, err)
		}
	})
}
