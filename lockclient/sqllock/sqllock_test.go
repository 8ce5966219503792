package sqllock_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
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
	admin           *sql.DB // bypasses the proxies; made by Queued
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

// Queued implements locktest.QueueCounter: the waiters of a lock are its rows in the
// waiters table not marked gone (a grant deletes its waiter's row).
func (n *namespace) Queued(ctx context.Context, key string) (int, error) {
	if n.admin == nil {
		n.admin = n.srv.open(n.t, n.dsn)
	}
	q := "SELECT count(*) FROM " + sqllock.DefaultTable + "_waiters WHERE lock_key = ? AND NOT gone"
	if n.srv.dialect == sqllock.Postgres {
		q = strings.Replace(q, "?", "$1", 1)
	}
	var c int
	err := n.admin.QueryRowContext(ctx, q, key).Scan(&c)
	return c, err
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
