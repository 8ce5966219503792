package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// mysqlErrNumber returns the server's error number err carries, 0 for none.
func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// deadlock runs two fenced transactions that update rows 1 and 2 in opposite order
// until InnoDB picks a victim (1213). It commits the winner and returns the victim, its
// lease and its error.
func deadlock(t *testing.T, db *sql.DB, ctx context.Context) (victim *sql.Tx, lease *txLease, verr error) {
	t.Helper()
	la, lb := newTxLease(10), newTxLease(11)
	txA, err := db.BeginTx(fencedsql.WithLease(ctx, la), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = txA.Rollback() })
	txB, err := db.BeginTx(fencedsql.WithLease(ctx, lb), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = txB.Rollback() })
	upd := "UPDATE accounts SET balance = balance + 1 WHERE id = ?"
	if _, err := txA.ExecContext(ctx, upd, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := txB.ExecContext(ctx, upd, 2); err != nil {
		t.Fatal(err)
	}
	errA := make(chan error, 1)
	go func() { _, err := txA.ExecContext(ctx, upd, 2); errA <- err }()
	time.Sleep(300 * time.Millisecond)
	_, errB := txB.ExecContext(ctx, upd, 1)
	winner := txA
	victim, lease, verr = txB, lb, errB
	if errB == nil {
		winner, victim, lease, verr = txB, txA, la, <-errA
	} else if err := <-errA; err != nil {
		t.Fatalf("both failed: %v / %v", err, errB)
	}
	if mysqlErrNumber(verr) != 1213 {
		t.Fatalf("the victim's error: %v; want the server's deadlock error 1213", verr)
	}
	if err := winner.Commit(); err != nil {
		t.Fatal(err)
	}
	return victim, lease, verr
}

// TestDeadlockVictimTxEnded: InnoDB rolls back a deadlock victim's whole transaction
// (1213) and the session goes on in autocommit. The wrapper marks the transaction
// ended: its later statements (Exec, Query, prepared) are refused unsent with
// ErrUnsupported (the driver's 1213 still reachable), and Commit — lease lost or not —
// sends only a ROLLBACK and reports NotCommitted. The victim's first write is gone and
// nothing after the deadlock is committed.
func TestDeadlockVictimTxEnded(t *testing.T) {
	for _, loseLease := range []bool{false, true} {
		name := "CommitWithLease"
		if loseLease {
			name = "LeaseLost"
		}
		t.Run(name, func(t *testing.T) {
			raw, db, ctx := txEnv(t, "")
			victim, lease, _ := deadlock(t, db, ctx)
			_, err := victim.ExecContext(ctx, "UPDATE accounts SET balance = 555 WHERE id = ?", 3)
			if !errors.Is(err, fencedsql.ErrUnsupported) || mysqlErrNumber(err) != 1213 {
				t.Fatalf("the victim's next write: %v; want ErrUnsupported wrapping the deadlock (1213)", err)
			}
			rows, err := victim.QueryContext(ctx, "SELECT balance FROM accounts WHERE id = 3")
			if err == nil {
				rows.Close()
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("the victim's next query: %v; want ErrUnsupported", err)
			}
			if _, err := victim.ExecContext(ctx, "INSERT INTO other VALUES (7, 7)"); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("the victim's next write to an unguarded table: %v; want ErrUnsupported", err)
			}
			if loseLease {
				lease.lose()
			}
			cerr := victim.Commit()
			if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted || mysqlErrNumber(cerr) != 1213 {
				t.Fatalf("the victim's Commit: %v (outcome %v); want NotCommitted wrapping the deadlock", cerr, fencedsql.CommitOutcome(cerr))
			}
			// The winner added 1 to rows 1 and 2; nothing of the victim is committed.
			if b1, b2, b3 := balance(t, raw, 1), balance(t, raw, 2), balance(t, raw, 3); b1 != 101 || b2 != 101 || b3 != 100 {
				t.Fatalf("balances %d, %d, %d; want 101, 101, 100 (the winner's writes only)", b1, b2, b3)
			}
			var n int
			if err := raw.QueryRow("SELECT COUNT(*) FROM other WHERE id = 7").Scan(&n); err != nil || n != 0 {
				t.Fatalf("the victim's refused insert: %d rows (%v); want none", n, err)
			}
			// The connection serves the next transaction normally.
			tx, err := db.BeginTx(fencedsql.WithToken(ctx, 12), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 7 WHERE id = 3"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if b := balance(t, raw, 3); b != 7 {
				t.Fatalf("the next transaction's write: balance %d, want 7", b)
			}
		})
	}
}

// TestLockWaitTimeoutTx: a lock wait timeout (1205) rolls back only the statement under
// the server's default innodb_rollback_on_timeout=OFF: the transaction goes on, and its
// commit keeps its writes. Under ON (read on the connection when the error happens) it
// rolls back the whole transaction, which then ends as a deadlock victim's does.
func TestLockWaitTimeoutTx(t *testing.T) {
	raw, db, ctx := txEnv(t, "innodb_lock_wait_timeout=1")
	var onTimeout int
	if err := raw.QueryRow("SELECT @@GLOBAL.innodb_rollback_on_timeout").Scan(&onTimeout); err != nil {
		t.Fatal(err)
	}
	holder, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.ExecContext(ctx, "SELECT * FROM accounts WHERE id = 2 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 555 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 556 WHERE id = 2"); mysqlErrNumber(err) != 1205 {
		t.Fatalf("the write to the locked row: %v; want the lock wait timeout 1205", err)
	}
	_, err = tx.ExecContext(ctx, "UPDATE accounts SET balance = 557 WHERE id = 3")
	cerr := tx.Commit()
	if onTimeout != 0 {
		if !errors.Is(err, fencedsql.ErrUnsupported) || cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
			t.Fatalf("innodb_rollback_on_timeout=ON: next write %v, Commit %v; want both refused", err, cerr)
		}
		if b1, b3 := balance(t, raw, 1), balance(t, raw, 3); b1 != 100 || b3 != 100 {
			t.Fatalf("innodb_rollback_on_timeout=ON: balances %d, %d; want 100, 100", b1, b3)
		}
		return
	}
	if err != nil || cerr != nil {
		t.Fatalf("innodb_rollback_on_timeout=OFF: next write %v, Commit %v; want both to succeed (only the timed-out statement was rolled back)", err, cerr)
	}
	if b1, b2, b3 := balance(t, raw, 1), balance(t, raw, 2), balance(t, raw, 3); b1 != 555 || b2 != 100 || b3 != 557 {
		t.Fatalf("innodb_rollback_on_timeout=OFF: balances %d, %d, %d; want 555, 100, 557", b1, b2, b3)
	}
}
