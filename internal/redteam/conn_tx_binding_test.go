package redteam

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// database/sql sends the statements of a *sql.Conn and of a *sql.Tx open on it through
// one driver connection, and lets the Conn begin again while its Tx is open. A second
// BeginTx would commit the first transaction (MariaDB's START TRANSACTION) or join it
// (PostgreSQL only warns) and rebind its statements to the second one's token and
// leases: refused, nothing sent. A statement of the Conn's own whose context binds
// another token would be written under the open transaction's token (a token-1 write
// over a row of token 3 because the transaction holds 4): refused, the transaction goes
// on. A statement carrying one of the transaction's own leases (WithLeases) still runs,
// and one carrying a lock taken during the transaction joins it as WithLeases would
// (the larger token, the lease checked). (Red-team passes rt10x F1, F2; rt11f F8, F9.)
func TestConnTxBinding(t *testing.T) {
	for _, b := range []backend{postgresBackend(), mysqlBackend(), sqliteBackend()} {
		t.Run(b.name, func(t *testing.T) {
			d := freshDB(t, b, entry{setup: []string{"UPDATE accounts SET fence_token = 0", "UPDATE accounts SET fence_token = 3 WHERE id = 3"}})
			w, _ := d.open(true, nil)
			locks := lockclient.New(memlock.New(), lockclient.WithTTL(30*time.Second))
			defer locks.Close(context.Background())
			la, err := locks.Acquire(d.ctx, "a")
			if err != nil {
				t.Fatal(err)
			}
			lb, err := locks.Acquire(d.ctx, "b")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := w.Conn(d.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			balance := func(id int) int64 {
				t.Helper()
				var v int64
				if err := d.raw.QueryRowContext(d.ctx, "SELECT balance FROM accounts WHERE id = "+strconv.Itoa(id)).Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}

			tx, err := conn.BeginTx(fencedsql.WithLeases(d.ctx, la, lb), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(d.ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
				t.Fatalf("the transaction's write: %v", err)
			}
			if _, err := conn.BeginTx(fencedsql.WithLease(d.ctx, lb), nil); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("second BeginTx on the Conn: %v, want ErrUnsupported", err)
			}
			if _, err := conn.ExecContext(fencedsql.WithToken(d.ctx, 1), "UPDATE accounts SET balance = 999 WHERE id = 3"); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("token-1 write on the Conn while a transaction bound to leases a, b is open: %v, want ErrUnsupported", err)
			}
			// One of the transaction's leases: its statement.
			if _, err := tx.ExecContext(fencedsql.WithLease(d.ctx, la), "UPDATE accounts SET balance = 222 WHERE id = 2"); err != nil {
				t.Errorf("statement under one of the transaction's leases: %v", err)
			}
			// A lock taken during the transaction joins it (WithLeases): the statement
			// runs, the transaction carries the larger token from then on, and the
			// Commit checks that lease too.
			lc, err := locks.Acquire(d.ctx, "c")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(fencedsql.WithLease(d.ctx, lc), "UPDATE accounts SET balance = 333 WHERE id = 3"); err != nil {
				t.Errorf("statement under a lock taken during the transaction: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if v1, v2, v3 := balance(1), balance(2), balance(3); v1 != 111 || v2 != 222 || v3 != 333 {
				t.Errorf("balances %d, %d, %d; want 111, 222, 333", v1, v2, v3)
			}
			var tok3 uint64
			if err := d.raw.QueryRowContext(d.ctx, "SELECT fence_token FROM accounts WHERE id = 3").Scan(&tok3); err != nil {
				t.Fatal(err)
			}
			if tok3 != lc.Token() {
				t.Errorf("row 3 token %d, want the joined lease's %d", tok3, lc.Token())
			}
			// A lock taken during a transaction and lost before Commit: ErrLeaseLost.
			tx3, err := conn.BeginTx(fencedsql.WithLease(d.ctx, la), nil)
			if err != nil {
				t.Fatal(err)
			}
			ld, err := locks.Acquire(d.ctx, "d")
			if err != nil {
				t.Fatal(err)
			}
			if err := ld.Release(d.ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := tx3.ExecContext(fencedsql.WithLease(d.ctx, ld), "UPDATE accounts SET balance = 444 WHERE id = 1"); !errors.Is(err, lockclient.ErrLeaseLost) {
				t.Errorf("statement under a lost lease the transaction does not hold: %v, want ErrLeaseLost", err)
			}
			if err := tx3.Commit(); !errors.Is(err, lockclient.ErrLeaseLost) && !errors.Is(err, fencedsql.ErrNotCommitted) {
				t.Errorf("Commit after the joined lease was lost: %v, want not committed", err)
			}
			// A transaction begun with a bare token: after a lease joined it (raising its
			// token), statements under the binding it was begun with are still its own
			// (red-team rt12f F4).
			own := fencedsql.WithToken(d.ctx, lb.Token())
			tx5, err := conn.BeginTx(own, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx5.Rollback()
			le, err := locks.Acquire(d.ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx5.ExecContext(fencedsql.WithLease(d.ctx, le), "UPDATE accounts SET balance = 555 WHERE id = 2"); err != nil {
				t.Fatalf("statement under a joining lease: %v", err)
			}
			if _, err := tx5.ExecContext(own, "UPDATE accounts SET balance = 556 WHERE id = 1"); err != nil {
				t.Errorf("the transaction's own binding after a lease joined it: %v, want accepted", err)
			}
			if err := tx5.Rollback(); err != nil {
				t.Fatal(err)
			}
			// The connection is free again: a new transaction begins.
			tx2, err := conn.BeginTx(fencedsql.WithLease(d.ctx, lb), nil)
			if err != nil {
				t.Fatalf("BeginTx after Commit: %v", err)
			}
			if err := tx2.Rollback(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
