package mysql_test

// Red-team rt20m: several locks per transaction, claims under contention, and a
// context that ends in the middle of a two-statement fenced operation.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// hookedHook: once a statement whose text starts with after has been executed without
// error (ExecContext), fire is called before the next statement the driver sends
// (whatever it is): the moment between the first statement of a fenced operation and
// what follows it.
type hookedHook struct {
	after string
	fire  func()
	armed atomic.Bool
	fired atomic.Bool
	log   []string
	mu    sync.Mutex
}

var hookedNow atomic.Pointer[hookedHook]

func hookedBefore(query string) {
	h := hookedNow.Load()
	if h == nil {
		return
	}
	h.mu.Lock()
	h.log = append(h.log, query)
	h.mu.Unlock()
	if h.armed.Load() && h.fired.CompareAndSwap(false, true) {
		h.fire()
	}
}

// hookedAfter arms the hook once a statement starting with its prefix was sent and
// answered without error.
func hookedAfter(query string, err error) {
	h := hookedNow.Load()
	if h == nil || err != nil {
		return
	}
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(query)), h.after) {
		h.armed.Store(true)
	}
}

// hookedDriver is go-sql-driver/mysql, unchanged except that it calls hookedBefore
// before each statement it sends (every optional interface forwarded).
type hookedDriver struct{ d driver.Driver }

func (d hookedDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &hookedConn{c: c}, nil
}

type hookedConn struct{ c driver.Conn }

func (c *hookedConn) Prepare(q string) (driver.Stmt, error) { hookedBefore(q); return c.c.Prepare(q) }
func (c *hookedConn) Close() error                          { return c.c.Close() }
func (c *hookedConn) Begin() (driver.Tx, error)             { return c.c.Begin() } //nolint:staticcheck
func (c *hookedConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return c.c.(driver.ConnBeginTx).BeginTx(ctx, o)
}
func (c *hookedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	hookedBefore(q)
	return c.c.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}
func (c *hookedConn) ExecContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Result, error) {
	hookedBefore(q)
	res, err := c.c.(driver.ExecerContext).ExecContext(ctx, q, a)
	hookedAfter(q, err)
	return res, err
}
func (c *hookedConn) QueryContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Rows, error) {
	hookedBefore(q)
	return c.c.(driver.QueryerContext).QueryContext(ctx, q, a)
}
func (c *hookedConn) Ping(ctx context.Context) error { return c.c.(driver.Pinger).Ping(ctx) }
func (c *hookedConn) ResetSession(ctx context.Context) error {
	return c.c.(driver.SessionResetter).ResetSession(ctx)
}
func (c *hookedConn) IsValid() bool { return c.c.(driver.Validator).IsValid() }
func (c *hookedConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.c.(driver.NamedValueChecker).CheckNamedValue(nv)
}

var hookedRegister sync.Once

const hookedDriverName = "rt20m-fenced-mysql-hooked"

// hookedOpen: the table accounts (primary key id; rows 1, 2, 3 at balance 100, token
// 0), the plain pool and a fenced pool over the hooked driver whose lazy schema check
// is re-run before every guarded statement (WithSchemaRecheck(1ns): a pool whose
// minute just ran out, at the worst moment). interpolateParams=true: statements with
// arguments go through ExecContext/QueryContext, where the hook sees them.
func hookedOpen(t *testing.T) (raw, fenced *sql.DB) {
	hookedRegister.Do(func() {
		sql.Register(hookedDriverName, fencedsql.Wrap(hookedDriver{d: &gomysql.MySQLDriver{}},
			fencedsql.WithDialect(mysql.Dialect), fencedsql.WithSchemaRecheck(time.Nanosecond)))
	})
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
		`INSERT INTO accounts VALUES (1, 100, 0, 0), (2, 100, 0, 0), (3, 100, 0, 0)`)
	fenced = testdb.Open(t, hookedDriverName, fencetest.WithParam(fencetest.WithParam(dsn, "fenced_tables=accounts"), "interpolateParams=true"))
	t.Cleanup(func() { hookedNow.Store(nil) })
	return raw, fenced
}

func hookedTokVer(t *testing.T, raw *sql.DB, id int64) (tok, ver int64) {
	t.Helper()
	if err := raw.QueryRow("SELECT fence_token, version FROM accounts WHERE id = ?", id).Scan(&tok, &ver); err != nil {
		t.Fatal(err)
	}
	return tok, ver
}

// TestKeyedClaimRecheckFailureAfterStampBreaksTx (data change on error). On
// MySQL/MariaDB a claim that is not a point claim runs keyed: the fencing UPDATE
// stamps and records its rows, then the read. Between the two the wrapper binds the
// read's arguments with guardedArgs, which runs the lazy schema check again when its
// verdict is older than WithSchemaRecheck. When that check fails — here the statement's
// context ends as the check's catalog query is about to be sent; equally a door made
// on the table meanwhile — queryClaim returns the error as it is (claim.go: `_, _,
// readArgs, err := c.guardedArgs(ctx, read, args); if err != nil { return nil, err }`),
// not through stampKept, which every other failure after the stamp goes through: the
// transaction is not marked, Commit succeeds, and rows 1 and 2, stamped by a claim
// that returned an error and no rows, are committed with the token and their version
// advanced. Right behaviour: an error after the fencing UPDATE stamped rows leaves the
// transaction able only to roll back (Commit NotCommitted, rows unchanged) — or the
// read's checks run before the UPDATE is sent.
func TestKeyedClaimRecheckFailureAfterStampBreaksTx(t *testing.T) {
	raw, fenced := hookedOpen(t)
	bg, cancelAll := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAll()
	tx, err := fenced.BeginTx(fencedsql.WithToken(bg, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	stmtCtx, cancel := context.WithCancel(bg)
	defer cancel()
	h := &hookedHook{after: "UPDATE", fire: cancel}
	hookedNow.Store(h)
	rows, qerr := tx.QueryContext(stmtCtx, "SELECT id FROM accounts WHERE balance = ? ORDER BY id LIMIT 2 FOR UPDATE", 100)
	if qerr == nil {
		for rows.Next() {
		}
		qerr = rows.Err()
		rows.Close()
	}
	hookedNow.Store(nil)
	if qerr == nil {
		t.Fatalf("set-up: the claim succeeded; want it to fail after its fencing UPDATE (statements: %q)", h.log)
	}
	cerr := tx.Commit()
	tok1, ver1 := hookedTokVer(t, raw, 1)
	tok2, ver2 := hookedTokVer(t, raw, 2)
	t.Logf("claim: %v; Commit: %v; rows 1, 2: token %d/%d, version %d/%d", qerr, cerr, tok1, tok2, ver1, ver2)
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Errorf("Commit after the claim failed between its statements: %v; want NotCommitted (its fencing UPDATE's stamp must not commit)", cerr)
	}
	if tok1 != 0 || ver1 != 0 || tok2 != 0 || ver2 != 0 {
		t.Errorf("rows 1, 2: token %d/%d, version %d/%d; want unchanged (0, 0)", tok1, tok2, ver1, ver2)
	}
}
