package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseBlockedByOpenWriterNamesIt (red-team rt31b F8): on MariaDB a raise waits for
// the shared lock every open guarded write holds on the floor row; a paused holder's
// open transaction blocks it, and after innodb_lock_wait_timeout it raises nothing.
// RaiseTokenFloor answers a *schema.SettleError (Blocked, errors.Is ErrFloorBlocked,
// not ErrFloorUnsettled: nothing was raised) naming the blocking connection, so that
// the operator can end it; the floor is unchanged; once the writer ends, a raise passes.
func TestRaiseBlockedByOpenWriterNamesIt(t *testing.T) {
	ctx := context.Background()
	dsn, raw := floorAccounts(t, 1)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// The raiser's sessions wait at most 1 s for a row lock.
	raiser := testdb.Open(t, "mysql", fencetest.WithParam(dsn, "innodb_lock_wait_timeout=1"))
	err = schema.RaiseTokenFloor(ctx, raiser, mysql.Dialect, 10)
	if err == nil {
		t.Fatal("RaiseTokenFloor returned nil while a transaction under token 8 was open")
	}
	var se *schema.SettleError
	if !errors.Is(err, schema.ErrFloorBlocked) || errors.Is(err, schema.ErrFloorUnsettled) || !errors.As(err, &se) || !se.Blocked {
		t.Fatalf("RaiseTokenFloor blocked by an open writer: %v; want a *SettleError (Blocked) wrapping ErrFloorBlocked", err)
	}
	var writer string
	if err := tx.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&writer); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(se.Open, writer) || !strings.Contains(err.Error(), writer) {
		t.Errorf("the error names connections %v, not the open writer's %s: %v", se.Open, writer, err)
	}
	if f, err := schema.TokenFloor(ctx, raw, mysql.Dialect); err != nil || f != 0 {
		t.Errorf("floor after the blocked raise = %d, %v; want 0 (nothing raised)", f, err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raiser, mysql.Dialect, 10); err != nil {
		t.Fatalf("raise after the writer ended: %v", err)
	}
}

// TestRaiseDeadlockVictimIsBlocked (red-team rt59c F1): a raise waiting for the floor
// row can close a lock cycle with the guarded writers it waits for — writer A (token
// 20) holds the floor row's shared lock, the raise waits for it, writer C (21) locks
// row 3 and its guard's floor read queues behind the raise, A then waits for row 3 —
// and InnoDB rolls back the cheapest transaction, the raise, with error 1213. The
// raise answered that raw driver error; now it is ErrFloorBlocked (a *SettleError
// naming the writers), as for a lock wait timeout, and the floor is unchanged. The
// raise is the victim on MariaDB 10.11 (it changed nothing); if a writer is chosen
// instead the raise succeeds once the cycle breaks, and the test says so.
func TestRaiseDeadlockVictimIsBlocked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, raw := floorAccounts(t, 1, 2, 3)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	begin := func(tok uint64, q string) *sql.Tx {
		tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, tok), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback() }) //nolint:errcheck
		if q != "" {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s under %d: %v", q, tok, err)
			}
		}
		return tx
	}
	a := begin(20, "UPDATE accounts SET balance = 1 WHERE id = 1")
	raised := make(chan error, 1)
	go func() { raised <- schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10) }()
	waitForStatement(t, ctx, raw, "fencedsql_floor")
	c := begin(21, "")
	cdone := make(chan error, 1)
	go func() {
		_, err := c.ExecContext(ctx, "UPDATE accounts SET balance = 3 WHERE id = 3")
		cdone <- err
	}()
	waitForStatement(t, ctx, raw, "balance = 3")
	adone := make(chan error, 1)
	go func() {
		_, err := a.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 3")
		adone <- err
	}()
	var rerr error
	select {
	case rerr = <-raised:
	case <-time.After(30 * time.Second):
		t.Fatal("the raise did not return")
	}
	if rerr == nil {
		t.Logf("InnoDB chose a writer as the victim (C: %v)", <-cdone)
	} else {
		var se *schema.SettleError
		if !errors.As(rerr, &se) || !errors.Is(rerr, schema.ErrFloorBlocked) {
			t.Errorf("RaiseTokenFloor, the victim of a deadlock with the writers it waited for: %v (%T); want a *schema.SettleError, ErrFloorBlocked", rerr, errors.Unwrap(rerr))
		}
		if f, err := schema.TokenFloor(ctx, raw, mysql.Dialect); err != nil || f != 0 {
			t.Errorf("floor after the failed raise: %d, %v; want 0", f, err)
		}
		if err := <-cdone; err != nil {
			t.Errorf("C's write once the raise was gone: %v", err)
		}
		c.Rollback() //nolint:errcheck
	}
	if err := <-adone; err != nil && rerr != nil {
		t.Errorf("A's write of row 3 once C ended: %v", err)
	}
}

// waitForStatement waits until a session of the test's database has been running a
// statement containing text for 300 ms: it waits for a lock (INNODB_TRX, which
// would say so directly, needs the PROCESS privilege).
func waitForStatement(t *testing.T, ctx context.Context, raw *sql.DB, text string) {
	t.Helper()
	for {
		var n int
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND LOCATE(?, INFO) > 0 AND TIME_MS > 300", text).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no session runs %q: %v", text, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
