package mysql_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseGivingUpLeavesNoWaiterBehind (red-team rt58d F1): MariaDB does not notice,
// while a statement waits for a lock, that its client has closed the connection. A
// raise that gave up at its context's end (a deadline, or a cancel) behind a paused
// holder left its write of the floor row queued to innodb_lock_wait_timeout, and every
// guarded write queued behind it — the current holder's too — after the raise had
// reported "NOT raised". The raise now bounds its lock waits by the context and ends
// its own session when the context ends. Oracle, for a row lock (a paused guarded
// write) and a metadata lock (LOCK TABLES on the floor table): the raise fails with
// ErrFloorBlocked, listing the holder and not itself; once it has returned, no
// statement on the floor table is left on the server, and the current holder's write
// (token 12) goes through at once. The raiser's pool has one connection: the blockers
// are listed all the same, and a later raise with a deadline leaves the pool's session
// lock waits as they were.
func TestRaiseGivingUpLeavesNoWaiterBehind(t *testing.T) {
	for _, c := range []struct {
		name   string
		cancel bool // a cancel, not a deadline
		mdl    bool // the floor table locked, not its row
	}{{"row-lock-deadline", false, false}, {"row-lock-cancel", true, false}, {"metadata-lock-deadline", false, true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dsn, raw := floorAccounts(t, 1, 2)
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			raiser := testdb.Open(t, "mysql", dsn)
			raiser.SetMaxOpenConns(1)

			var holder string
			var end func()
			if c.mdl {
				conn, err := raw.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, "LOCK TABLES "+dialect.FloorTable+" READ"); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&holder); err != nil {
					t.Fatal(err)
				}
				end = func() { _, _ = conn.ExecContext(ctx, "UNLOCK TABLES") }
			} else {
				stale, err := fenced.BeginTx(fencedsql.WithToken(ctx, 8), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer stale.Rollback() //nolint:errcheck
				if _, err := stale.ExecContext(ctx, "UPDATE accounts SET balance = 99 WHERE id = 1"); err != nil {
					t.Fatal(err)
				}
				if err := stale.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&holder); err != nil {
					t.Fatal(err)
				}
				end = func() { _ = stale.Rollback() }
			}

			rctx, cancel := context.WithTimeout(ctx, time.Second)
			if c.cancel {
				rctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(time.Second, cancel)
			}
			err := schema.RaiseTokenFloor(rctx, raiser, mysql.Dialect, 10)
			cancel()
			var se *schema.SettleError
			if !errors.Is(err, schema.ErrFloorBlocked) || !errors.As(err, &se) {
				t.Fatalf("RaiseTokenFloor giving up behind a lock: %v, want a *SettleError (ErrFloorBlocked)", err)
			}
			if se.SessionLeft != nil {
				t.Errorf("the raise could not end its own session: %v", err)
			}
			if !c.mdl && !slices.Contains(se.Open, holder) {
				t.Errorf("the error names connections %v, not the paused holder's %s: %v", se.Open, holder, err)
			}
			var left int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INFO LIKE '%"+dialect.FloorTable+"%'").Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left != 0 {
				t.Errorf("after RaiseTokenFloor returned (%v), %d statement(s) on the floor table are still on the server", err, left)
			}
			if !c.mdl {
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				defer wcancel()
				start := time.Now()
				if _, err := fenced.ExecContext(fencedsql.WithToken(wctx, 12), "UPDATE accounts SET balance = 1 WHERE id = 2"); err != nil || time.Since(start) > 2*time.Second {
					t.Errorf("after the blocked raise returned, the current holder's write under 12 took %v: %v (queued behind the raise's write?)", time.Since(start).Round(time.Millisecond), err)
				}
			}
			if f, err := schema.TokenFloor(ctx, raw, mysql.Dialect); err != nil || f != 0 {
				t.Errorf("floor after the blocked raise = %d, %v; want 0 (nothing raised)", f, err)
			}

			end()
			rctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := schema.RaiseTokenFloor(rctx, raiser, mysql.Dialect, 10); err != nil {
				t.Fatalf("raise after the holder ended: %v", err)
			}
			var same bool
			if err := raiser.QueryRowContext(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout = @@GLOBAL.innodb_lock_wait_timeout AND @@SESSION.lock_wait_timeout = @@GLOBAL.lock_wait_timeout").Scan(&same); err != nil || !same {
				t.Errorf("after a raise with a deadline, the pool's session lock waits differ from the server's (%v): the raise's lowered session went back to the pool", err)
			}
		})
	}
}
