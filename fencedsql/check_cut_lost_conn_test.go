package fencedsql_test

// A check query cut by the connection's loss on a real driver — go-sql-driver/mysql's
// ErrInvalidConn, pgx's FATAL 57P01 of a server shutdown, a restart, a failover or
// pg_terminate_backend — is a *CheckCutError, not a *SchemaError with the go-sqlmock
// hint (red-team rt53b F1, found by the process fault schedule of examples/drill,
// TestFaultScheduleMoneyConserved: its db-drop, terminate and db-restart faults). The
// injected-EOF tests (first_read_cut_test.go, listed_cut_test.go) never saw the real
// drivers' errors.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// lostConnProxy forwards to target; once armed, the first client chunk holding match
// runs onMatch (before the chunk is forwarded); if onMatch returns true the chunk is
// dropped and both sides closed (the connection lost under the query).
type lostConnProxy struct {
	*netproxy.Proxy
	armed atomic.Bool
	fired atomic.Bool
}

func newLostConnProxy(t *testing.T, target, match string, onMatch func() bool) *lostConnProxy {
	np, err := netproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { np.Close() })
	p := &lostConnProxy{Proxy: np}
	np.Intercept(func(chunk []byte) netproxy.Verdict {
		if p.armed.Load() && bytes.Contains(chunk, []byte(match)) && p.fired.CompareAndSwap(false, true) && onMatch() {
			return netproxy.Cut
		}
		return netproxy.Pass
	})
	return p
}

// lostConnGuardedUpdate runs a guarded UPDATE in a transaction on a fresh fenced pool
// whose proxy p cuts the first catalog query once armed; it returns the first error:
// BeginTx's (the pool's first-connection checks run there) or the UPDATE's (the
// table's lazy checks). With lazy, p is armed only after a first transaction has done
// the pool's first-connection work, so that the cut falls on the table's lazy checks.
func lostConnGuardedUpdate(t *testing.T, ctx context.Context, driverName, dsn string, p *lostConnProxy, lazy bool) error {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if lazy {
		tx, err := db.BeginTx(fencedsql.WithToken(ctx, 5), nil)
		if err != nil {
			t.Fatalf("setup: the first transaction: %v", err)
		}
		_ = tx.Rollback()
	}
	p.armed.Store(true)
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 5), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	_, err = tx.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE lost_conn_acct SET balance = balance + 1 WHERE id = 1")
	return err
}

func wantCheckCut(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("the UPDATE succeeded although its connection was lost")
	}
	var cut *fencedsql.CheckCutError
	if errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &cut) || strings.Contains(err.Error(), "go-sqlmock") {
		t.Errorf("a check query cut by the connection's loss: got %T %q (ErrSchema %v), want a *CheckCutError, not ErrSchema, without the go-sqlmock hint",
			err, err, errors.Is(err, fencedsql.ErrSchema))
	}
}

const lostConnTable = "CREATE TABLE lost_conn_acct (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, " +
	"fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"

// MySQL/MariaDB: the connection is lost under the check query (a network cut, the
// server restarting, KILL CONNECTION): go-sql-driver returns mysql.ErrInvalidConn
// ("invalid connection"), which the dialect's ConnLossJudge counts.
func TestCheckCutByLostConnectionMySQL(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		name := "first-connection"
		if lazy {
			name = "lazy-check"
		}
		t.Run(name, func(t *testing.T) { checkCutByLostConnectionMySQL(t, lazy) })
	}
}

func checkCutByLostConnectionMySQL(t *testing.T, lazy bool) {
	dsn := testdb.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testdb.Open(t, "mysql", dsn, lostConnTable, "INSERT INTO lost_conn_acct (id, balance) VALUES (1, 0)")
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newLostConnProxy(t, cfg.Addr, "information_schema", func() bool { return true })
	cfg.Addr = p.Addr()
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params[fencedsql.ParamTables] = "lost_conn_acct"
	err = lostConnGuardedUpdate(t, ctx, "fenced-mysql", cfg.FormatDSN(), p, lazy)
	if !p.fired.Load() {
		t.Fatalf("no catalog query was cut (err %v)", err)
	}
	t.Logf("error: %v", err)
	wantCheckCut(t, err)
}

// PostgreSQL: the server ends the session under the check query (a fast shutdown or
// restart, a failover's fencing of the old primary, pg_terminate_backend): pgx returns
// the server's FATAL 57P01 (admin_shutdown), which the dialect's ConnLossJudge counts.
func TestCheckCutBySessionTerminatedPostgres(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := testdb.Open(t, "pgx", dsn, lostConnTable, "INSERT INTO lost_conn_acct (id, balance) VALUES (1, 0)")
	u, err := url.Parse(dsn)
	if err != nil {
		t.Skip("keyword/value DSN: the test needs a URL")
	}
	p := newLostConnProxy(t, u.Host, "pg_catalog", func() bool {
		_, _ = admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'lost-conn-cut'")
		time.Sleep(200 * time.Millisecond) // the FATAL reaches the client
		return false
	})
	u.Host = p.Addr()
	q := u.Query()
	q.Set("application_name", "lost-conn-cut")
	q.Set(fencedsql.ParamTables, "lost_conn_acct")
	u.RawQuery = q.Encode()
	err = lostConnGuardedUpdate(t, ctx, "fenced-pgx", u.String(), p, false)
	if !p.fired.Load() {
		t.Fatalf("no catalog query was cut (err %v)", err)
	}
	t.Logf("error: %v", err)
	wantCheckCut(t, err)
}

// PostgreSQL, schema check off: rt46c F4's partitions query, cut by a real server
// termination (57P01) instead of an injected io.ErrUnexpectedEOF, is a cut read (the
// first-connection work is not marked done): the next connection reads the partitions
// again, and the stale UPDATE naming the partition is refused.
func TestFirstReadCutBySessionTerminatedPostgresReadAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg := testdb.Postgres(t)
	admin := testdb.Open(t, "pgx", pg,
		`CREATE TABLE fr_p (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) PARTITION BY RANGE (id)`,
		`CREATE TABLE fr_p1 PARTITION OF fr_p FOR VALUES FROM (0) TO (100)`,
		`INSERT INTO fr_p (id, fence_token, version) VALUES (1, 10, 1)`)
	reps, err := schema.Check(ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "fr_p"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, admin, r.Fix...)
	}
	u, err := url.Parse(pg)
	if err != nil {
		t.Skip("keyword/value DSN: the test needs a URL")
	}
	p := newLostConnProxy(t, u.Host, "d(oid) AS (", func() bool {
		_, _ = admin.ExecContext(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'lost-conn-cut'")
		time.Sleep(200 * time.Millisecond)
		return false
	})
	u.Host = p.Addr()
	q := u.Query()
	q.Set("application_name", "lost-conn-cut")
	u.RawQuery = q.Encode()
	p.armed.Store(true)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), u.String()),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("fr_p"), fencedsql.WithSchemaCheck(false))
	t.Cleanup(func() { db.Close() })
	first := db.PingContext(ctx)
	if !p.fired.Load() {
		t.Fatalf("setup: the partitions query was not sent (ping: %v)", first)
	}
	if !errors.As(first, new(*fencedsql.CheckCutError)) {
		t.Errorf("the partitions query cut by the session's end: ping %T %v, want a *CheckCutError (not read: the next connection reads again)", first, first)
	}
	var err2 error
	for range 3 {
		_, err2 = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE fr_p1 SET balance = 666, version = version + 1 WHERE id = 1`)
		if err2 != nil && !strings.Contains(err2.Error(), "57P01") {
			break
		}
	}
	var bal, tok int64
	if qerr := admin.QueryRow(`SELECT balance, fence_token FROM fr_p WHERE id = 1`).Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if bal == 666 || !errors.Is(err2, fencedsql.ErrFenced) {
		t.Errorf("after the first connection was terminated by the server under the partitions query (ping: %v): stale UPDATE (token 5 < row's 10) naming the partition: %v, row now balance %d token %d; want ErrFenced, nothing written", first, err2, bal, tok)
	}
}

// MySQL/MariaDB, schema check off: rt46c F4's registry read, cut by a real lost
// connection (go-sql-driver's ErrInvalidConn) instead of an injected EOF, is a cut
// read: the next connection reads the registry again, and a stale write of a
// registered table is refused.
func TestFirstReadCutByLostConnectionMySQLReadAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		`CREATE TABLE fr_acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO fr_acc (id, fence_token, version) VALUES (1, 10, 1)`,
		`CREATE TABLE fr_listed (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	if err := schema.RegisterTables(ctx, raw, mysqldialect.Dialect, schema.GuardSpec{Table: "fr_acc"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newLostConnProxy(t, cfg.Addr, dialect.RegistryTable, func() bool { return true })
	cfg.Addr = p.Addr()
	p.armed.Store(true)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, cfg.FormatDSN()),
		fencedsql.WithDialect(mysqldialect.Dialect), fencedsql.Guard("fr_listed"), fencedsql.WithSchemaCheck(false))
	t.Cleanup(func() { db.Close() })
	first := db.PingContext(ctx)
	if !p.fired.Load() {
		t.Fatalf("setup: the registry read was not cut (ping: %v)", first)
	}
	if !errors.As(first, new(*fencedsql.CheckCutError)) {
		t.Errorf("the registry read cut by the connection's loss: ping %T %v, want a *CheckCutError (not read: the next connection reads again)", first, first)
	}
	var err2 error
	for range 3 {
		if _, err2 = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE fr_acc SET balance = 666 WHERE id = 1`); err2 != nil {
			break
		}
	}
	var bal int64
	if qerr := raw.QueryRow(`SELECT balance FROM fr_acc WHERE id = 1`).Scan(&bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal == 666 || !errors.Is(err2, fencedsql.ErrFenced) {
		t.Errorf("after the first connection was lost under the registry read (ping: %v): stale UPDATE (token 5 < row's 10) of a registered table: %v, balance now %d; want ErrFenced, nothing written", first, err2, bal)
	}
}
