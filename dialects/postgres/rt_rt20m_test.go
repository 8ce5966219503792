package postgres_test

// Red-team rt20m: several locks per transaction, claims under contention, and a
// context that ends in the middle of a two-statement fenced operation.

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

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt20mHook, when set, is called by the rt20m driver before it sends a statement whose
// text starts with prefix (case-insensitively): the moment between two statements of
// one fenced operation. It stands for a context whose deadline passes right then.
type rt20mHook struct {
	prefix string
	fire   func()
	fired  atomic.Bool
	// after, when set, arms the hook only once a statement starting with it was
	// sent; the hook then fires before the next statement starting with prefix.
	after string
	armed atomic.Bool
}

var rt20mHookNow atomic.Pointer[rt20mHook]

func rt20mBefore(query string) {
	h := rt20mHookNow.Load()
	if h == nil {
		return
	}
	up := strings.ToUpper(strings.TrimSpace(query))
	if h.after != "" && !h.armed.Load() {
		if strings.HasPrefix(up, h.after) {
			h.armed.Store(true)
		}
		return
	}
	if strings.HasPrefix(up, h.prefix) && h.fired.CompareAndSwap(false, true) {
		h.fire()
	}
}

// rt20mDriver is pgx's database/sql driver, unchanged except that it calls
// rt20mBefore before each statement it sends.
type rt20mDriver struct{ d driver.Driver }

func (d rt20mDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &rt20mConn{Conn: c.(*stdlib.Conn)}, nil
}

type rt20mConn struct{ *stdlib.Conn }

func (c *rt20mConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	rt20mBefore(q)
	return c.Conn.ExecContext(ctx, q, args)
}

func (c *rt20mConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	rt20mBefore(q)
	return c.Conn.QueryContext(ctx, q, args)
}

func (c *rt20mConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	rt20mBefore(q)
	return c.Conn.PrepareContext(ctx, q)
}

var rt20mRegister sync.Once

const (
	rt20mDriverName  = "rt20m-fenced-pgx-hooked"
	rt20mRecheckName = "rt20m-fenced-pgx-hooked-recheck"
)

// rt20mRecheck is the last rt20mOpen's fenced pool whose lazy schema check is re-run
// before every guarded statement (WithSchemaRecheck(1ns)).
var rt20mRecheck *sql.DB

// rt20mOpen creates a database with the guarded table accounts (no guard installed:
// DELETE and claims that the one statement does not take run as two statements) and
// returns the plain pool and a fenced pool over the hooked driver.
func rt20mOpen(t *testing.T, setup ...string) (raw, fenced *sql.DB) {
	rt20mRegister.Do(func() {
		sql.Register(rt20mDriverName, fencedsql.Wrap(rt20mDriver{d: stdlib.GetDefaultDriver()}, fencedsql.WithDialect(postgres.Dialect)))
		sql.Register(rt20mRecheckName, fencedsql.Wrap(rt20mDriver{d: stdlib.GetDefaultDriver()}, fencedsql.WithDialect(postgres.Dialect),
			fencedsql.WithSchemaRecheck(time.Nanosecond)))
	})
	dsn := testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn, append([]string{
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 100, 0, 0), (2, 100, 0, 0)`,
	}, setup...)...)
	fenced = testdb.Open(t, rt20mDriverName, dsn+"&fenced_tables=accounts")
	rt20mRecheck = testdb.Open(t, rt20mRecheckName, dsn+"&fenced_tables=accounts")
	t.Cleanup(func() { rt20mHookNow.Store(nil) })
	return raw, fenced
}

func rt20mRow(t *testing.T, raw *sql.DB, id int64) (exists bool, tok, ver int64) {
	t.Helper()
	err := raw.QueryRow("SELECT fence_token, version FROM accounts WHERE id = $1", id).Scan(&tok, &ver)
	if errors.Is(err, sql.ErrNoRows) {
		return false, 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, tok, ver
}

// TestRTrt20mDeleteContextEndsBetweenStatementsCommitsStamp (data change on error).
// A DELETE on a table without the guard runs, in the caller's transaction, as the
// fencing UPDATE and then the DELETE restricted to the rows it stamped. When the
// statement's context ends between the two (a request deadline), pgx refuses to send
// the DELETE (the context is already done: nothing reaches the server) and the DELETE
// fails. The wrapper's rule for a second statement that fails after the first stamped
// rows (stamp_kept.go) is to mark the transaction so that Commit rolls back — except
// on a database that aborts the transaction on any error (dialect.TxAborter:
// PostgreSQL), where it trusts the server to have aborted it. Here the server never saw
// an error: the transaction is alive, Commit sends COMMIT and succeeds, and row 1 —
// which the DELETE reported it did not delete — is committed stamped (token 10,
// version advanced). Right behaviour: a failure of the second statement that the
// server did not answer (a context error, driver.ErrBadConn, any wrapper-side error
// after the stamp) breaks the transaction on PostgreSQL as well: Commit returns
// NotCommitted and row 1 is left as it was (token 0, version 0).
func TestRTrt20mDeleteContextEndsBetweenStatementsCommitsStamp(t *testing.T) {
	raw, fenced := rt20mOpen(t)
	bg, cancelAll := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAll()
	tx, err := fenced.BeginTx(fencedsql.WithToken(bg, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	stmtCtx, cancel := context.WithCancel(bg)
	defer cancel()
	rt20mHookNow.Store(&rt20mHook{prefix: "DELETE", fire: cancel})
	_, derr := tx.ExecContext(stmtCtx, "DELETE FROM accounts WHERE id = 1")
	if derr == nil {
		t.Fatalf("set-up: the DELETE succeeded; want its second statement refused by the ended context")
	}
	rt20mHookNow.Store(nil)
	cerr := tx.Commit()
	exists, tok, ver := rt20mRow(t, raw, 1)
	t.Logf("DELETE: %v; Commit: %v; row 1 exists %v, token %d, version %d", derr, cerr, exists, tok, ver)
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Errorf("Commit after the DELETE failed between its statements: %v; want NotCommitted (the fencing UPDATE's stamp must not commit without the DELETE)", cerr)
	}
	if !exists || tok != 0 || ver != 0 {
		t.Errorf("row 1: exists %v, token %d, version %d; want it unchanged (exists, token 0, version 0)", exists, tok, ver)
	}
}

// TestRTrt20mClaimContextEndsBetweenStatementsCommitsStamp (data change on error). The
// same for a claim run as two statements (a subquery in the select list keeps the
// one-statement claim from taking it): the fencing UPDATE stamps row 1, the context
// ends before the read is sent, the locking read fails — the caller got no rows and an
// error — and Commit succeeds with row 1 stamped by a claim that failed. Right
// behaviour: as for the DELETE, Commit returns NotCommitted and row 1 is unchanged.
func TestRTrt20mClaimContextEndsBetweenStatementsCommitsStamp(t *testing.T) {
	raw, fenced := rt20mOpen(t)
	bg, cancelAll := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancelAll()
	tx, err := fenced.BeginTx(fencedsql.WithToken(bg, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	stmtCtx, cancel := context.WithCancel(bg)
	defer cancel()
	rt20mHookNow.Store(&rt20mHook{prefix: "SELECT ID, (SELECT", fire: cancel})
	rows, qerr := tx.QueryContext(stmtCtx, "SELECT id, (SELECT 1) AS one FROM accounts WHERE id = 1 FOR UPDATE")
	if qerr == nil {
		n := 0
		for rows.Next() {
			n++
		}
		qerr = rows.Err()
		rows.Close()
		if qerr == nil {
			t.Fatalf("set-up: the claim read %d rows without error; want its read refused by the ended context", n)
		}
	}
	rt20mHookNow.Store(nil)
	cerr := tx.Commit()
	_, tok, ver := rt20mRow(t, raw, 1)
	t.Logf("claim: %v; Commit: %v; row 1 token %d, version %d", qerr, cerr, tok, ver)
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Errorf("Commit after the claim failed between its statements: %v; want NotCommitted", cerr)
	}
	if tok != 0 || ver != 0 {
		t.Errorf("row 1: token %d, version %d; want it unchanged (token 0, version 0)", tok, ver)
	}
}
