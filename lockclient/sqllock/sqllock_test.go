package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/goleak"

	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is one kind of database server the tests run against.
type server struct {
	name    string
	dialect sqllock.Dialect
	driver  string
	newDSN  func(testing.TB) string // a fresh database
}

var servers = []server{
	{"postgres", sqllock.Postgres, "pgx", testdb.Postgres},
	{"mariadb", sqllock.MySQL, "mysql", testdb.MySQL},
}

// addr returns the host:port of the server dsn names.
func (s server) addr(t testing.TB, dsn string) string {
	t.Helper()
	if s.dialect == sqllock.Postgres {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}

// via returns dsn with its server address replaced by addr (a proxy) and params added.
func (s server) via(t testing.TB, dsn, addr string, params map[string]string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	if s.dialect == sqllock.Postgres {
		if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			u.Host = addr
			q := u.Query()
			for k, v := range params {
				q.Set(k, v)
			}
			u.RawQuery = q.Encode()
			return u.String()
		}
		dsn += " host=" + host + " port=" + port // keyword/value: later wins
		for k, v := range params {
			dsn += " " + k + "=" + v
		}
		return dsn
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = addr
	cfg.Timeout = 2 * time.Second
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range params {
		cfg.Params[k] = v
	}
	return cfg.FormatDSN()
}

func (s server) open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(s.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fresh returns the DSN of a new database that has the lease table (named table, ""
// for the default), and an admin connection to it that bypasses every proxy.
func (s server) fresh(t testing.TB, table string) (dsn string, admin *sql.DB) {
	t.Helper()
	dsn = s.newDSN(t)
	admin = s.open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sqllock.CreateTable(ctx, admin, s.dialect, table); err != nil {
		t.Fatal(err)
	}
	return dsn, admin
}

// namespace gives each owner its own *sql.DB, connected through its own proxy that the
// faults cut.
type namespace struct {
	*netproxy.Group // the Faults: one proxy per owner
	t               *testing.T
	srv             server
	dsn             string
	opts            []sqllock.Option
}

func newNamespace(t *testing.T, srv server, opts ...sqllock.Option) *namespace {
	dsn, _ := srv.fresh(t, "")
	g := netproxy.NewGroup(srv.addr(t, dsn))
	t.Cleanup(g.Close)
	return &namespace{Group: g, t: t, srv: srv, dsn: dsn, opts: opts}
}

// db returns a database handle through a new proxy, registered for owner.
func (n *namespace) db(owner string, params map[string]string) *sql.DB {
	n.t.Helper()
	p, err := n.Proxy(owner)
	if err != nil {
		n.t.Fatal(err)
	}
	return n.srv.open(n.t, n.srv.via(n.t, n.dsn, p.Addr(), params))
}

func (n *namespace) backend(owner string, params map[string]string) *sqllock.Backend {
	n.t.Helper()
	db := n.db(owner, params)
	warmUp(n.t, db)
	b, err := sqllock.New(db, n.opts...)
	if err != nil {
		n.t.Fatal(err)
	}
	return b
}

// warmUp opens two pooled connections (one for statements, one for the PostgreSQL
// listener), as an application pings its database at start: the suite's timings
// (ContentionNoStarvation) then measure the lock service, not 16 clients' TCP and SCRAM
// handshakes at once on a loaded machine.
func warmUp(t *testing.T, db *sql.DB) {
	ctx := ctxT(t, 10*time.Second)
	c1, err1 := db.Conn(ctx)
	c2, err2 := db.Conn(ctx)
	for _, c := range []*sql.Conn{c1, c2} {
		if c != nil {
			c.Close()
		}
	}
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
}

func (n *namespace) Backend(owner string) lockclient.Backend { return n.backend(owner, nil) }
func (n *namespace) Faults() locktest.Faults                 { return n.Group }

func TestConformance(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			t.Parallel()
			locktest.Run(t, locktest.Harness{TTL: locktest.NetworkTTL, FIFO: true, New: func(t *testing.T) locktest.Namespace {
				return newNamespace(t, srv)
			}})
		})
	}
	// PostgreSQL with Wait polling instead of LISTEN (as behind PgBouncer).
	t.Run("postgres-polling", func(t *testing.T) {
		t.Parallel()
		locktest.Run(t, locktest.Harness{TTL: locktest.NetworkTTL, FIFO: true, New: func(t *testing.T) locktest.Namespace {
			return newNamespace(t, servers[0], sqllock.WithPolling())
		}})
	})
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func forEachServer(t *testing.T, fn func(t *testing.T, srv server)) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) { fn(t, srv) })
	}
}

// The session-level suite on each server. Expiry is the server's: the client sends the
// TTL as a duration, never a time, and a grant the server considers expired is expired,
// whatever the client's clock says.
//
// Not parallel: the statement hook the server clock installs is global.
func TestSessionConformance(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		locktest.RunSession(t, locktest.SessionHarness{
			New: func(t *testing.T) locktest.Namespace { return newNamespace(t, srv) },
			ForeignGrant: func(g lockclient.Grant) lockclient.Grant {
				return lockclient.Grant{Key: g.Key, Token: g.Token}
			},
			SecondRelease: lockclient.ErrNotOwner, // no row of this session and token
			ServerClock: func(t *testing.T, ns locktest.Namespace) locktest.ServerClock {
				n := ns.(*namespace)
				return newServerClock(t, srv, srv.open(t, n.dsn))
			},
		})
	})
}

// serverClock reads and moves expires_at in the lease table, and checks on the way that
// every statement the backends send lets the server's clock judge expiry.
type serverClock struct {
	srv   server
	admin *sql.DB // bypasses the proxies
}

// newServerClock starts recording the backends' statements; at the end of the test it
// checks them.
func newServerClock(t *testing.T, srv server, admin *sql.DB) serverClock {
	var mu sync.Mutex
	var stmts []string
	restore := sqllock.SetStatementHook(func(q string, args []any) {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range args {
			switch a.(type) {
			case string, int64:
			default:
				t.Errorf("argument %v of type %T sent with %q", a, a, q)
			}
		}
		stmts = append(stmts, q)
	})
	t.Cleanup(func() {
		restore()
		mu.Lock()
		defer mu.Unlock()
		checkServerClockStatements(t, srv, stmts)
	})
	return serverClock{srv: srv, admin: admin}
}

// CheckExpiry: the row's expiry was computed by the server, about TTL from its now.
func (c serverClock) CheckExpiry(t *testing.T, key string, l *lockclient.Lease, ttl time.Duration) {
	var left float64
	q := `SELECT extract(epoch FROM expires_at - clock_timestamp()) FROM fencedsql_locks WHERE lock_key = $1`
	if c.srv.dialect == sqllock.MySQL {
		q = `SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1e6 FROM fencedsql_locks WHERE lock_key = ?`
	}
	if err := c.admin.QueryRowContext(ctxT(t, 10*time.Second), q, key).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left <= ttl.Seconds()-5 || left > ttl.Seconds() {
		t.Fatalf("expires_at - server now = %.3fs, want about %v", left, ttl)
	}
}

// Expire moves the server's judgement one hour ahead, as a server clock would: the
// client's deadline is still far away, but the grant is now expired.
func (c serverClock) Expire(t *testing.T, key string) {
	shift := `UPDATE fencedsql_locks SET expires_at = expires_at - interval '1 hour' WHERE lock_key = $1`
	if c.srv.dialect == sqllock.MySQL {
		shift = `UPDATE fencedsql_locks SET expires_at = expires_at - INTERVAL 1 HOUR WHERE lock_key = ?`
	}
	if _, err := c.admin.ExecContext(ctxT(t, 10*time.Second), shift, key); err != nil {
		t.Fatal(err)
	}
}

// checkServerClockStatements checks that every write takes its time from the server's
// clock function that does not depend on the transaction or the session's time zone.
func checkServerClockStatements(t *testing.T, srv server, stmts []string) {
	clock := "clock_timestamp()"
	if srv.dialect == sqllock.MySQL {
		clock = "UTC_TIMESTAMP(6)"
	}
	kinds := map[string]bool{}
	for _, q := range stmts {
		up := strings.ToUpper(q)
		switch {
		case strings.HasPrefix(up, "CALL"):
			kinds["grant"] = true // the procedure, checked below
		case strings.Contains(up, "INSERT"), strings.HasPrefix(up, "UPDATE"):
			kinds["write"] = true
			if !strings.Contains(q, clock) {
				t.Errorf("statement without the server clock %s: %s", clock, q)
			}
		}
		for _, bad := range []string{"NOW()", "CURRENT_TIMESTAMP", "LOCALTIMESTAMP", "SYSDATE"} {
			if strings.Contains(up, bad) {
				t.Errorf("statement uses %s (transaction/statement-start or session-zone time): %s", bad, q)
			}
		}
	}
	if srv.dialect == sqllock.MySQL {
		ddl, err := sqllock.DDL(sqllock.MySQL, "")
		if err != nil {
			t.Fatal(err)
		}
		proc := ddl[len(ddl)-1]
		if !strings.Contains(proc, "expires_at > UTC_TIMESTAMP(6)") || !strings.Contains(proc, "UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND") {
			t.Errorf("grant procedure does not judge expiry by UTC_TIMESTAMP(6):\n%s", proc)
		}
	}
	if len(stmts) < 4 {
		t.Fatalf("hook saw %d statements", len(stmts))
	}
}

// Keys the table cannot store are refused before any statement, and are not ErrHeld.
func TestOverlongKeyRefused(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		n := newNamespace(t, srv)
		ctx := ctxT(t, 30*time.Second)
		a := locktest.OpenSession(t, n.Backend("a"), "a", time.Minute)
		if _, err := a.TryAcquire(ctx, strings.Repeat("x", sqllock.MaxKeyLen+1)); err == nil || errors.Is(err, lockclient.ErrHeld) {
			t.Fatalf("TryAcquire of an over-long key = %v", err)
		}
	})
}

// Clients whose sessions use different time zones agree on expiry: the lease table
// holds absolute times (timestamptz; UTC DATETIME from UTC_TIMESTAMP on MySQL).
func TestSessionTimeZonesAgree(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		t.Parallel()
		n := newNamespace(t, srv)
		ctx := ctxT(t, 30*time.Second)
		tz := func(zone string) map[string]string {
			if srv.dialect == sqllock.Postgres {
				return map[string]string{"timezone": zone}
			}
			return map[string]string{"time_zone": "'" + zone + "'"}
		}
		east, west := "+09:00", "-07:00"
		if srv.dialect == sqllock.Postgres {
			east, west = "Asia/Tokyo", "America/Los_Angeles"
		}
		ttl := 400 * time.Millisecond
		a := locktest.OpenSession(t, n.backend("a", tz(east)), "a", ttl)
		b := locktest.OpenSession(t, n.backend("b", tz(west)), "b", ttl)
		for _, pair := range [][2]lockclient.Session{{a, b}, {b, a}} {
			holder, other := pair[0], pair[1]
			g, err := holder.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
				t.Fatalf("TryAcquire of a live lease from another time zone = %v, want ErrHeld", err)
			}
			if err := holder.Renew(ctx, g); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			time.Sleep(ttl + 100*time.Millisecond)
			g2, err := other.TryAcquire(ctx, "k")
			if err != nil {
				t.Fatalf("TryAcquire of an expired lease from another time zone: %v", err)
			}
			if err := other.Release(ctx, g2); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// On PostgreSQL a release wakes the first waiter through NOTIFY, long before any poll
// would; on MySQL the first waiter polls within the poll interval (backing off while the
// holder keeps the key). Either way a waiter does not busy-loop while the holder keeps
// renewing.
func TestWaitWakesOnReleaseWithoutBusyLoop(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		pollMin, pollMax := 20*time.Millisecond, 200*time.Millisecond
		if srv.dialect == sqllock.Postgres {
			pollMin, pollMax = 2*time.Second, 2*time.Second // a poll could not be that fast
		}
		n := newNamespace(t, srv, sqllock.WithPollInterval(pollMin, pollMax))
		ctx := ctxT(t, 30*time.Second)
		ttl := 5 * time.Second
		a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
		defer a.Close(context.Background())
		b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl))
		defer b.Close(context.Background())
		la, err := a.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}

		var mu sync.Mutex
		checks := 0
		restore := sqllock.SetStatementHook(func(q string, args []any) {
			if strings.Contains(q, "_grant_v2") { // a waiter's call: join, refresh, try
				mu.Lock()
				checks++
				mu.Unlock()
			}
		})
		defer restore()
		got := make(chan *lockclient.Lease, 1)
		go func() {
			lb, err := b.Acquire(ctx, "k")
			if err != nil {
				t.Errorf("Acquire: %v", err)
			}
			got <- lb
		}()
		hold := 1500 * time.Millisecond
		time.Sleep(hold) // a renews meanwhile
		mu.Lock()
		c := checks
		mu.Unlock()
		// MySQL: one check per poll (20–200ms) → at most hold/20ms; PostgreSQL: LISTEN,
		// re-checking every TTL/4 → a handful.
		maxChecks := int(hold/pollMin) + 2
		if srv.dialect == sqllock.Postgres {
			maxChecks = 4
		}
		if c < 1 || c > maxChecks {
			t.Fatalf("waiter made %d checks in %v, want 1..%d", c, hold, maxChecks)
		}
		released := time.Now()
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case lb := <-got:
			d := time.Since(released)
			t.Logf("%d checks while held for %v; granted %v after the release", c, hold, d)
			if limit := pollMax + 800*time.Millisecond; srv.dialect == sqllock.MySQL && d > limit {
				t.Fatalf("waiter granted %v after the release, poll max is %v", d, pollMax)
			}
			if srv.dialect == sqllock.Postgres && d > time.Second {
				t.Fatalf("waiter granted %v after the release: not woken by NOTIFY", d)
			}
			if lb != nil {
				lb.Release(ctx)
			}
		case <-ctx.Done():
			t.Fatal("waiter not granted")
		}
	})
}

// PostgreSQL: when the listening connection breaks, waiters fall back to polling and the
// listener comes back, so a later release is again noticed through NOTIFY.
func TestListenerRecovers(t *testing.T) {
	// Polls every minute: a waiter granted within seconds of the release was woken by
	// NOTIFY (a bound that is generous for a loaded machine and far from the poll).
	n := newNamespace(t, servers[0], sqllock.WithPollInterval(time.Minute, time.Minute))
	ctx := ctxT(t, 30*time.Second)
	ttl := 20 * time.Second
	a := lockclient.New(n.Backend("a"), lockclient.WithOwner("a"), lockclient.WithTTL(ttl))
	defer a.Close(context.Background())
	// After the reset, b's other pooled connections fail once each: retry those quickly.
	b := lockclient.New(n.Backend("b"), lockclient.WithOwner("b"), lockclient.WithTTL(ttl),
		lockclient.WithRetry(5*time.Millisecond, 20*time.Millisecond))
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
		time.Sleep(500 * time.Millisecond)
		if round == 0 {
			n.Reset("b") // drops the listening connection (and any other of b's)
			time.Sleep(2 * time.Second)
		}
		released := time.Now()
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("round %d: waiter granted %v after the release", round, time.Since(released))
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: waiter not granted within 5s of the release: NOTIFY did not wake it (it polls every minute)", round)
		}
	}
}

// CreateTable is idempotent and safe to run concurrently; tables with other names (and
// schema-qualified ones) are independent lock namespaces with their own token source.
func TestCreateTable(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv server) {
		t.Parallel()
		dsn, admin := srv.fresh(t, "")
		ctx := ctxT(t, 60*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- sqllock.CreateTable(ctx, admin, srv.dialect, "")
				errs <- sqllock.CreateTable(ctx, admin, srv.dialect, "other_locks")
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("concurrent CreateTable: %v", err)
			}
		}
		qualified := "public.q_locks"
		if srv.dialect == sqllock.MySQL {
			var dbname string
			if err := admin.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbname); err != nil {
				t.Fatal(err)
			}
			qualified = dbname + ".q_locks"
		}
		if err := sqllock.CreateTable(ctx, admin, srv.dialect, qualified); err != nil {
			t.Fatal(err)
		}
		db := srv.open(t, dsn)
		tok := map[string]uint64{}
		for _, table := range []string{"", "other_locks", qualified} {
			opts := []sqllock.Option{}
			if table != "" {
				opts = append(opts, sqllock.WithTable(table))
			}
			b, err := sqllock.New(db, opts...)
			if err != nil {
				t.Fatal(err)
			}
			s := locktest.OpenSession(t, b, "x", time.Minute)
			g, err := s.TryAcquire(ctx, "k") // the same key in each table
			if err != nil {
				t.Fatalf("table %q: %v", table, err)
			}
			tok[table] = g.Token
		}
		for table, tk := range tok {
			if tk != 1 {
				t.Fatalf("table %q: first token %d, want 1 (one sequence per table)", table, tk)
			}
		}
		for _, bad := range []string{"a;b", "x.y.z", `"q"`, "1abc", strings.Repeat("n", 49)} {
			if _, err := sqllock.New(db, sqllock.WithTable(bad)); err == nil {
				t.Fatalf("New accepted table name %q", bad)
			}
		}
	})
}

func TestDialectDetection(t *testing.T) {
	pg, err := sql.Open("pgx", "postgres://localhost/x")
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	my, err := sql.Open("mysql", "u@tcp(localhost:1)/x")
	if err != nil {
		t.Fatal(err)
	}
	defer my.Close()
	for _, c := range []struct {
		db   *sql.DB
		want sqllock.Dialect
	}{{pg, sqllock.Postgres}, {my, sqllock.MySQL}} {
		b, err := sqllock.New(c.db)
		if err != nil {
			t.Fatal(err)
		}
		if b.Dialect() != c.want || b.Table() != sqllock.DefaultTable {
			t.Fatalf("dialect %v table %q, want %v %q", b.Dialect(), b.Table(), c.want, sqllock.DefaultTable)
		}
	}
	b, err := sqllock.New(my, sqllock.WithDialect(sqllock.Postgres), sqllock.WithTable("s.t"))
	if err != nil || b.Dialect() != sqllock.Postgres || b.Table() != "s.t" {
		t.Fatalf("WithDialect/WithTable: %v %v %v", b, err, b.Dialect())
	}
}

// BenchmarkAcquireRelease measures one uncontended lockclient Acquire+Release on each
// server (two round trips: grant, release), connected directly.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			dsn, _ := srv.fresh(b, "")
			db := srv.open(b, dsn)
			be, err := sqllock.New(db)
			if err != nil {
				b.Fatal(err)
			}
			c := lockclient.New(be)
			defer c.Close(context.Background())
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				l, err := c.Acquire(ctx, "k")
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
