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

// hookedHook, when set, is called by the rt20m driver before it sends a statement whose
// text starts with prefix (case-insensitively): the moment between two statements of
// one fenced operation. It stands for a context whose deadline passes right then.
type hookedHook struct {
	prefix string
	fire   func()
	fired  atomic.Bool
	// after, when set, arms the hook only once a statement starting with it was
	// sent; the hook then fires before the next statement starting with prefix.
	after string
	armed atomic.Bool
}

var hookedNow atomic.Pointer[hookedHook]

func hookedBefore(query string) {
	h := hookedNow.Load()
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

// hookedDriver is pgx's database/sql driver, unchanged except that it calls
// hookedBefore before each statement it sends.
type hookedDriver struct{ d driver.Driver }

func (d hookedDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &hookedConn{Conn: c.(*stdlib.Conn)}, nil
}

type hookedConn struct{ *stdlib.Conn }

func (c *hookedConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	hookedBefore(q)
	return c.Conn.ExecContext(ctx, q, args)
}

func (c *hookedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	hookedBefore(q)
	return c.Conn.QueryContext(ctx, q, args)
}

func (c *hookedConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	hookedBefore(q)
	return c.Conn.PrepareContext(ctx, q)
}

var hookedRegister sync.Once

const (
	hookedDriverName  = "rt20m-fenced-pgx-hooked"
	hookedRecheckName = "rt20m-fenced-pgx-hooked-recheck"
)

// hookedRecheck is the last hookedOpen's fenced pool whose lazy schema check is re-run
// before every guarded statement (WithSchemaRecheck(1ns)).
var hookedRecheck *sql.DB

// hookedOpen creates a database with the guarded table accounts (no guard installed:
// DELETE and claims that the one statement does not take run as two statements) and
// returns the plain pool and a fenced pool over the hooked driver.
func hookedOpen(t *testing.T, setup ...string) (raw, fenced *sql.DB) {
	hookedRegister.Do(func() {
		sql.Register(hookedDriverName, fencedsql.Wrap(hookedDriver{d: stdlib.GetDefaultDriver()}, fencedsql.WithDialect(postgres.Dialect)))
		sql.Register(hookedRecheckName, fencedsql.Wrap(hookedDriver{d: stdlib.GetDefaultDriver()}, fencedsql.WithDialect(postgres.Dialect),
			fencedsql.WithSchemaRecheck(time.Nanosecond)))
	})
	dsn := testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn, append([]string{
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 100, 0, 0), (2, 100, 0, 0)`,
	}, setup...)...)
	fenced = testdb.Open(t, hookedDriverName, dsn+"&fenced_tables=accounts")
	hookedRecheck = testdb.Open(t, hookedRecheckName, dsn+"&fenced_tables=accounts")
	t.Cleanup(func() { hookedNow.Store(nil) })
	return raw, fenced
}

func hookedRow(t *testing.T, raw *sql.DB, id int64) (exists bool, tok, ver int64) {
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

// TestDeleteContextEndingBetweenStatementsFailsCommit (data change on error).
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
func TestDeleteContextEndingBetweenStatementsFailsCommit(t *testing.T) {
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
	hookedNow.Store(&hookedHook{prefix: "DELETE", fire: cancel})
	_, derr := tx.ExecContext(stmtCtx, "DELETE FROM accounts WHERE id = 1")
	if derr == nil {
		t.Fatalf("set-up: the DELETE succeeded; want its second statement refused by the ended context")
	}
	hookedNow.Store(nil)
	cerr := tx.Commit()
	exists, tok, ver := hookedRow(t, raw, 1)
	t.Logf("DELETE: %v; Commit: %v; row 1 exists %v, token %d, version %d", derr, cerr, exists, tok, ver)
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Errorf("Commit after the DELETE failed between its statements: %v; want NotCommitted (the fencing UPDATE's stamp must not commit without the DELETE)", cerr)
	}
	if !exists || tok != 0 || ver != 0 {
		t.Errorf("row 1: exists %v, token %d, version %d; want it unchanged (exists, token 0, version 0)", exists, tok, ver)
	}
}

// TestClaimContextEndingBetweenStatementsFailsCommit (data change on error). The
// same for a claim run as two statements (a subquery in the select list keeps the
// one-statement claim from taking it): the fencing UPDATE stamps row 1, the context
// ends before the read is sent, the locking read fails — the caller got no rows and an
// error — and Commit succeeds with row 1 stamped by a claim that failed. Right
// behaviour: as for the DELETE, Commit returns NotCommitted and row 1 is unchanged.
func TestClaimContextEndingBetweenStatementsFailsCommit(t *testing.T) {
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
	hookedNow.Store(&hookedHook{prefix: "SELECT ID, (SELECT", fire: cancel})
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
	hookedNow.Store(nil)
	cerr := tx.Commit()
	_, tok, ver := hookedRow(t, raw, 1)
	t.Logf("claim: %v; Commit: %v; row 1 token %d, version %d", qerr, cerr, tok, ver)
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Errorf("Commit after the claim failed between its statements: %v; want NotCommitted", cerr)
	}
	if tok != 0 || ver != 0 {
		t.Errorf("row 1: token %d, version %d; want it unchanged (token 0, version 0)", tok, ver)
	}
}

// losableLease is a fencedsql.Lease the test loses at will.
type losableLease struct {
	tok  uint64
	once sync.Once
	ch   chan struct{}
}

func newLosableLease(tok uint64) *losableLease {
	return &losableLease{tok: tok, ch: make(chan struct{})}
}
func (l *losableLease) Token() uint64         { return l.tok }
func (l *losableLease) Lost() <-chan struct{} { return l.ch }
func (l *losableLease) lose()                 { l.once.Do(func() { close(l.ch) }) }
func (l *losableLease) Err() error {
	select {
	case <-l.ch:
		return errors.New("rt20m: lease lost")
	default:
		return nil
	}
}

// TestAutocommitDeleteChecksLeaseBeforeCommit (fail-open, defence in depth). A
// DELETE outside a transaction, on a table without the guard, runs in a transaction
// the wrapper opens itself: BEGIN, the fencing UPDATE, the DELETE, COMMIT. The lease is
// checked once, before BEGIN. Here the fencing UPDATE waits for a row lock another
// session holds (contention), the lease is lost during the wait (the watchdog closed
// Lost: the client knows), the lock is released, and the wrapper goes on to send the
// DELETE and its own COMMIT without looking at the lease again: the row is deleted and
// the statement reports success, although the lease was known lost before COMMIT was
// sent. Inside a caller's transaction the same DELETE would be refused at Commit
// (G2/G13: "every statement and Commit … refuse once any is lost"); the wrapper's own
// COMMIT is a commit it sends. Right behaviour: before the second statement and before
// its own COMMIT, twoStep checks the statement's leases (checkLease) and, when one is
// lost, rolls its transaction back and fails with an error wrapping
// lockclient.ErrLeaseLost; row 1 stays.
func TestAutocommitDeleteChecksLeaseBeforeCommit(t *testing.T) {
	raw, fenced := hookedOpen(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.ExecContext(ctx, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	lease := newLosableLease(10)
	done := make(chan error, 1)
	go func() {
		_, err := fenced.ExecContext(fencedsql.WithLease(ctx, lease), "DELETE FROM accounts WHERE id = 1")
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the fencing UPDATE waits for row 1
	lease.lose()
	time.Sleep(100 * time.Millisecond)
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	derr := <-done
	exists, _, _ := hookedRow(t, raw, 1)
	t.Logf("DELETE under a lease lost during its lock wait: %v; row 1 exists %v", derr, exists)
	if derr == nil || !exists {
		t.Errorf("DELETE: %v, row 1 exists %v; want an error wrapping lockclient.ErrLeaseLost and row 1 kept (the lease was known lost before the wrapper sent its own COMMIT)", derr, exists)
	}
}

// TestExecClaimLocksOnlyStampedRows (fail-open, narrow). A locking read sent
// with Exec (`tx.ExecContext("SELECT … FOR UPDATE")`, the "lock these rows" idiom) in
// its two-statement form (here a subquery in the select list keeps the one statement
// from taking it; on MySQL/MariaDB every claim) runs execClaim: the claim's plain
// fencing UPDATE (p.Pre, not the located form queryClaim uses), then the caller's own
// text again, unrestricted and uncounted (claim.go: "it returns no rows to count").
// A row that starts to match between the two — another session commits row 2's
// balance 0 → 100 under READ COMMITTED — is not stamped by the UPDATE but is locked
// FOR UPDATE by the re-run text. G10: "SELECT … FOR UPDATE on a guarded table claims
// the rows it locks … A late write by an older holder to those rows then fails". Here
// holder 10's transaction holds row 2's lock with row 2 still at token 0, and once it
// commits, an older holder's (token 7) write to row 2 is accepted. Right behaviour:
// the Exec form is restricted to the rows the claim stamped as the Query form is (the
// located/keyed read, counted), or refused, so that no row is locked unclaimed; the
// older holder's write to row 2 then fails with ErrFenced (or row 2 is not locked).
func TestExecClaimLocksOnlyStampedRows(t *testing.T) {
	raw, fenced := hookedOpen(t, `UPDATE accounts SET balance = 0 WHERE id = 2`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	hookedNow.Store(&hookedHook{after: "UPDATE ACCOUNTS", prefix: "", fire: func() {
		if _, err := raw.Exec("UPDATE accounts SET balance = 100 WHERE id = 2"); err != nil {
			t.Errorf("concurrent commit: %v", err)
		}
	}})
	if _, err := tx.ExecContext(ctx, "SELECT id, (SELECT 1) AS one FROM accounts WHERE balance > 50 FOR UPDATE"); err != nil {
		t.Fatalf("claim sent with Exec: %v", err)
	}
	hookedNow.Store(nil)
	// Row 2 is locked by holder 10's transaction…
	probe, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, lockErr := probe.ExecContext(ctx, "SELECT id FROM accounts WHERE id = 2 FOR UPDATE NOWAIT")
	_ = probe.Rollback()
	_, tok2, _ := hookedRow(t, raw, 2)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// …and after it commits, the older holder's write to row 2 lands.
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 7), "UPDATE accounts SET balance = balance - 1 WHERE id = 2")
	t.Logf("row 2 locked by the Exec claim: %v (NOWAIT probe: %v); row 2 token while locked: %d; older holder's write after commit: %v", lockErr != nil, lockErr, tok2, werr)
	if lockErr != nil && tok2 != 10 {
		t.Errorf("the Exec claim locked row 2 FOR UPDATE but left it at token %d (unclaimed); want every row it locks stamped with 10", tok2)
	}
	if lockErr != nil && werr == nil {
		t.Errorf("older holder (token 7) wrote row 2, which holder 10 had locked FOR UPDATE: want ErrFenced")
	}
}
