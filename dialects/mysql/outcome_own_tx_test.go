package mysql_test

// Red-team rt35b: fail closed, second round — a context or server timeout in the
// middle of a multi-statement fenced operation, and the outcome its error reports.
// Uses the rt20m hooked driver (claim_recheck_context_test.go): an autocommit DELETE runs in the
// wrapper's own transaction as the keyed fencing UPDATE, the keyed DELETE and
// COMMIT AND NO CHAIN NO RELEASE (or ROLLBACK … on a failure).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
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

func rowExists(t *testing.T, raw *sql.DB, id int64) bool {
	t.Helper()
	var n int
	if err := raw.QueryRow("SELECT COUNT(*) FROM accounts WHERE id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestOwnDeleteTxCancelledNotCommitted (cosmetic: error
// typed with the wrong outcome). The statement's context ends after the fencing
// UPDATE of an autocommit DELETE, before its DELETE is sent: go-sql-driver refuses to
// send it, the wrapper sends ROLLBACK AND NO CHAIN NO RELEASE (answered), row 1 is
// unchanged and the pooled connection is outside any transaction (all of which holds).
// The error is classified Unknown by CommitOutcome, though the wrapper never sent its
// COMMIT and its ROLLBACK succeeded. Right behaviour (fencedsql doc, "Commit
// outcomes"): a failure of the wrapper's own transaction before its COMMIT was sent
// wraps ErrNotCommitted.
func TestOwnDeleteTxCancelledNotCommitted(t *testing.T) {
	raw, fenced := hookedOpen(t)
	fenced.SetMaxOpenConns(1)
	bg, cancelAll := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAll()
	ctx, cancel := context.WithCancel(fencedsql.WithToken(bg, 10))
	defer cancel()
	h := &hookedHook{after: "UPDATE", fire: cancel}
	hookedNow.Store(h)
	_, derr := fenced.ExecContext(ctx, "DELETE FROM accounts WHERE balance = 100 AND id = 1")
	hookedNow.Store(nil)
	if !h.fired.Load() {
		t.Fatalf("set-up: the hook did not fire after the fencing UPDATE (err %v)", derr)
	}
	tok, ver := hookedTokVer(t, raw, 1)
	var in int
	ierr := fenced.QueryRow("SELECT @@in_transaction").Scan(&in)
	t.Logf("DELETE: %v (outcome %v); row 1 tok %d ver %d; in_transaction %d (%v)", derr, fencedsql.CommitOutcome(derr), tok, ver, in, ierr)
	if derr == nil || tok != 0 || ver != 0 || ierr != nil || in != 0 {
		t.Errorf("DELETE %v, row 1 tok %d ver %d, in_transaction %d (%v); want an error, row 1 unchanged, a clean connection", derr, tok, ver, in, ierr)
	}
	if o := fencedsql.CommitOutcome(derr); o != fencedsql.NotCommitted {
		t.Errorf("CommitOutcome(DELETE error) = %v; want NotCommitted (the wrapper rolled back its own transaction before sending COMMIT)", o)
	}
}

// TestOwnDeleteTxLockWaitNotCommitted (cosmetic, as above). The DELETE
// of an autocommit DELETE waits for a lock (a foreign-key check: another transaction
// inserted a child row of row 1) and fails with innodb_lock_wait_timeout (1205); the
// wrapper rolls back its own transaction, row 1 is unchanged, the connection is clean
// (holds). CommitOutcome calls the error Unknown. Right behaviour: NotCommitted — a
// server error on a statement (the doc's table: "a server error on a statement or on
// COMMIT: NotCommitted"), in a transaction the wrapper then rolled back.
func TestOwnDeleteTxLockWaitNotCommitted(t *testing.T) {
	raw, fenced := hookedOpen(t)
	fenced.SetMaxOpenConns(1)
	if _, err := raw.Exec(`CREATE TABLE rt35b_child (id BIGINT PRIMARY KEY, acc BIGINT, FOREIGN KEY (acc) REFERENCES accounts(id)) ENGINE=InnoDB`); err != nil {
		t.Fatal(err)
	}
	holder, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.Exec(`INSERT INTO rt35b_child VALUES (1, 1)`); err != nil {
		t.Fatal(err)
	}
	ctx := fencedsql.WithToken(context.Background(), 10)
	conn, err := fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatalf("SET: %v", err)
	}
	_, derr := conn.ExecContext(ctx, "DELETE FROM accounts WHERE balance = 100 AND id = 1")
	var in int
	ierr := conn.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&in)
	conn.Close()
	_ = holder.Rollback()
	tok, ver := hookedTokVer(t, raw, 1)
	t.Logf("DELETE: %v (outcome %v); row 1 tok %d ver %d; in_transaction %d (%v)", derr, fencedsql.CommitOutcome(derr), tok, ver, in, ierr)
	if mysqlErrNumber(derr) != 1205 {
		t.Fatalf("set-up: DELETE error %v; want 1205", derr)
	}
	if tok != 0 || ver != 0 || !rowExists(t, raw, 1) || ierr != nil || in != 0 {
		t.Errorf("row 1 tok %d ver %d, in_transaction %d (%v); want unchanged and a clean connection", tok, ver, in, ierr)
	}
	if o := fencedsql.CommitOutcome(derr); o != fencedsql.NotCommitted {
		t.Errorf("CommitOutcome(DELETE error) = %v; want NotCommitted", o)
	}
}

// TestAutocommitServerErrorNotCommitted (cosmetic: error typed with the
// wrong outcome; the doc's table is not what the code does on MySQL/MariaDB). A
// one-statement guarded UPDATE outside a transaction fails with a server error — here
// innodb_lock_wait_timeout (1205) while another transaction holds the row — so the
// server did not commit it. The fencedsql doc's "Commit outcomes" table: "a server
// error on a statement or on COMMIT — NotCommitted". CommitOutcome calls it Unknown:
// classifyOutcome's isServerError looks for a SQLState() method, which PostgreSQL's
// errors have and go-sql-driver's *mysql.MySQLError (a SQLState field) has not, and
// the MySQL dialect's Classify says ErrorOther for it. Right behaviour: a
// *mysql.MySQLError (any server error number) on a statement is NotCommitted, as the
// table says, and the write's error wraps ErrNotCommitted.
func TestAutocommitServerErrorNotCommitted(t *testing.T) {
	raw, fenced := hookedOpen(t)
	fenced.SetMaxOpenConns(1)
	holder, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.Exec(`SELECT id FROM accounts WHERE id = 1 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	ctx := fencedsql.WithToken(context.Background(), 10)
	conn, err := fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatalf("SET: %v", err)
	}
	_, uerr := conn.ExecContext(ctx, "UPDATE accounts SET balance = 5 WHERE id = 1")
	t.Logf("UPDATE: %v (outcome %v)", uerr, fencedsql.CommitOutcome(uerr))
	if mysqlErrNumber(uerr) != 1205 {
		t.Fatalf("set-up: UPDATE error %v; want 1205", uerr)
	}
	if o := fencedsql.CommitOutcome(uerr); o != fencedsql.NotCommitted {
		t.Errorf("CommitOutcome(UPDATE error 1205) = %v; want NotCommitted (a server error on a statement)", o)
	}
}

// cutHook, when set, is called by the rt35b driver before it sends a statement whose
// text starts with prefix (once).
type cutHook struct {
	prefix string
	fire   func()
	fired  atomic.Bool
}

var cutNow atomic.Pointer[cutHook]

func cutBefore(q string) {
	if h := cutNow.Load(); h != nil && strings.HasPrefix(q, h.prefix) && h.fired.CompareAndSwap(false, true) {
		h.fire()
	}
}

// cutDriver is go-sql-driver/mysql under the rt20m hooked connection, with
// cutBefore called before each statement as well.
type cutDriver struct{ d driver.Driver }

func (d cutDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &cutConn{hookedConn: c.(*hookedConn)}, nil
}

type cutConn struct{ *hookedConn }

func (c *cutConn) ExecContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Result, error) {
	cutBefore(q)
	return c.hookedConn.ExecContext(ctx, q, a)
}

func (c *cutConn) QueryContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Rows, error) {
	cutBefore(q)
	return c.hookedConn.QueryContext(ctx, q, a)
}

var cutRegister sync.Once

const cutDriverName = "rt35b-fenced-mysql-hooked"

// cutOpen: the rt20m table (rows 1, 2, 3) and a fenced pool over the rt35b driver
// whose lazy checks re-run before every guarded statement (WithSchemaRecheck(1ns)).
func cutOpen(t *testing.T) (raw, fenced *sql.DB) {
	cutRegister.Do(func() {
		sql.Register(cutDriverName, fencedsql.Wrap(cutDriver{d: hookedDriver{d: &gomysql.MySQLDriver{}}},
			fencedsql.WithDialect(mysql.Dialect), fencedsql.WithSchemaRecheck(time.Nanosecond)))
	})
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
		`INSERT INTO accounts VALUES (1, 100, 0, 0), (2, 100, 0, 0), (3, 100, 0, 0)`)
	fenced = testdb.Open(t, cutDriverName, fencetest.WithParam(fencetest.WithParam(dsn, "fenced_tables=accounts"), "interpolateParams=true"))
	t.Cleanup(func() { cutNow.Store(nil) })
	return raw, fenced
}

// pkQuery and keyedInit start the primary key query of the keyed statements
// (keyed.go rowKey) and their session variables' initialisation (keyedNonce).
const (
	pkQuery   = "SELECT k.COLUMN_NAME, c.COLUMN_TYPE, COALESCE(c.COLLATION_NAME, ''), k.TABLE_SCHEMA FROM"
	keyedInit = "SET @fencedsql_claim = NULL"
)

// keyedCheckCancelled ends the DELETE's context right before the statement
// starting with prefix is sent, and checks that the error keeps context.Canceled.
func keyedCheckCancelled(t *testing.T, name, prefix string) {
	raw, fenced := cutOpen(t)
	bg, cancelAll := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAll()
	ctx, cancel := context.WithCancel(fencedsql.WithToken(bg, 10))
	defer cancel()
	h := &cutHook{prefix: prefix, fire: cancel}
	cutNow.Store(h)
	_, derr := fenced.ExecContext(ctx, "DELETE FROM accounts WHERE balance = 100 AND id = 1")
	cutNow.Store(nil)
	if !h.fired.Load() {
		t.Fatalf("set-up: no statement starting with %q was sent (err %v)", prefix, derr)
	}
	tok, ver := hookedTokVer(t, raw, 1)
	t.Logf("DELETE: %v; errors.Is Canceled %v, ErrSchema %v; row 1 tok %d ver %d", derr,
		errors.Is(derr, context.Canceled), errors.Is(derr, fencedsql.ErrSchema), tok, ver)
	if derr == nil || tok != 0 || ver != 0 || !rowExists(t, raw, 1) {
		t.Fatalf("row 1 changed or no error")
	}
	if !errors.Is(derr, context.Canceled) {
		t.Errorf("errors.Is(err, context.Canceled) false for %v; want the context's error kept (the %s was cut by the ended context: not a schema problem)", derr, name)
	}
}

// TestKeyedCheckKeepsContextError (untyped error). A DELETE (or claim) on
// MySQL/MariaDB runs keyed: before its fencing UPDATE the wrapper reads the table's
// primary key (rowKey, once per WithSchemaRecheck) and, on a connection's first keyed
// pair, initialises the session variables (keyedNonce). When the statement's context
// ends while either runs — a request deadline, as at any other point — the error the
// caller gets is a bare *SchemaError ("the primary key query failed", "setting the
// keyed statements' session variables failed") whose Err is nil: errors.Is(err,
// context.Canceled) / DeadlineExceeded is false, the driver's error (a lost
// connection, a lock wait timeout, the server's message) is gone, and the error says
// ErrSchema — "fix the schema" — for a request that merely timed out. Every other lazy
// check keeps the cause (tableVerdict, verifySession: SchemaError.Err). Nothing is
// changed (holds). Right behaviour: keep the driver's error as SchemaError.Err (or
// return it as it is), so that errors.Is finds context.Canceled, and ErrBadConn-class
// errors stay recognisable.
func TestKeyedCheckKeepsContextError(t *testing.T) {
	keyedCheckCancelled(t, "primary key query", pkQuery)
}

// TestKeyedInitKeepsContextError (untyped error): as
// TestKeyedCheckKeepsContextError, the context ending while the connection's
// first keyed pair initialises its session variables (keyedNonce: "setting the keyed
// statements' session variables failed", the cause dropped).
func TestKeyedInitKeepsContextError(t *testing.T) {
	keyedCheckCancelled(t, "session variables' initialisation", keyedInit)
}
