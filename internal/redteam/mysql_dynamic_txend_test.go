package redteam

// Under WithDynamicSQL(true), MariaDB dynamic statements can end the wrapper's
// transaction without failing: a procedure that commits, a handler that swallows the
// deadlock InnoDB rolled the transaction back for, EXECUTE IMMEDIATE 'COMMIT' or DDL, a
// compound statement that commits. The wrapper must see it: later statements of the
// transaction refused (not run in autocommit), and neither Commit nor Rollback answering
// as if the transaction were still the wrapper's.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// dynamicPool opens a fenced pool on d with WithDynamicSQL(true).
func dynamicPool(t *testing.T, d *dbs) *sql.DB {
	t.Helper()
	c, err := d.b.connector(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	w := fencedsql.OpenDB(c, fencedsql.WithDialect(d.b.dialect), fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
	t.Cleanup(func() { w.Close() })
	return w
}

func balanceOf(t *testing.T, d *dbs, id int) int64 {
	t.Helper()
	var b int64
	if err := d.raw.QueryRowContext(d.ctx, "SELECT balance FROM accounts WHERE id = ?", id).Scan(&b); err != nil {
		t.Fatalf("read row %d: %v", id, err)
	}
	return b
}

// TestDynamicCallSwallowingDeadlockEndsTx: InnoDB picks the fenced transaction as a
// deadlock victim inside a CALL whose CONTINUE HANDLER swallows 1213: the CALL
// succeeds, the transaction is gone. The next write must be refused, not autocommitted,
// and Commit must not answer nil.
func TestDynamicCallSwallowingDeadlockEndsTx(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{setup: []string{
		"UPDATE accounts SET fence_token = 0",
		"CREATE TABLE heavy (id BIGINT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE PROCEDURE bump(k BIGINT) BEGIN DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END; UPDATE ledger SET amount = amount + 1 WHERE id = k; END",
	}})
	w := dynamicPool(t, d)
	ctx := fencedsql.WithToken(d.ctx, 7)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE ledger SET amount = 10 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	other, err := d.raw.BeginTx(d.ctx, nil) // heavier: InnoDB picks the lighter victim
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	for i := 0; i < 50; i++ {
		if _, err := other.ExecContext(d.ctx, "INSERT INTO heavy VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.ExecContext(d.ctx, "UPDATE ledger SET amount = 20 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	otherDone := make(chan error, 1)
	go func() {
		_, err := other.ExecContext(d.ctx, "UPDATE ledger SET amount = 21 WHERE id = 1")
		otherDone <- err
	}()
	time.Sleep(300 * time.Millisecond)
	_, callErr := tx.ExecContext(ctx, "CALL bump(2)") // the deadlock, caught by the handler
	if err := <-otherDone; err != nil {
		t.Fatalf("the other transaction was the victim (%v); the test needs the fenced one to be", err)
	}
	if err := other.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err3 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 333 WHERE id = 3")
	cerr := tx.Commit()
	b1, b3 := balanceOf(t, d, 1), balanceOf(t, d, 3)
	t.Logf("CALL: %v; write after it: %v; Commit: %v (%v); row 1 = %d, row 3 = %d", callErr, err3, cerr, fencedsql.CommitOutcome(cerr), b1, b3)
	if b3 == 333 || !errors.Is(err3, fencedsql.ErrUnsupported) {
		t.Errorf("the write after the transaction ended: %v (row 3 = %d), want refused unsent", err3, b3)
	}
	if cerr == nil && b1 != 111 {
		t.Errorf("Commit answered nil but the transaction's write of row 1 is gone (row 1 = %d)", b1)
	}
}

// TestDynamicCallCommittingEndsTx: a procedure that COMMITs commits the transaction's
// write of row 1 inside the CALL. The wrapper cannot undo it, but must not run what
// follows in autocommit, nor report the lost lease's Commit as NotCommitted.
func TestDynamicCallCommittingEndsTx(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{setup: []string{
		"UPDATE accounts SET fence_token = 0",
		"CREATE PROCEDURE note_it() BEGIN UPDATE ledger SET note = 'x' WHERE id = 1; COMMIT; END",
	}})
	w := dynamicPool(t, d)
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(30*time.Second))
	defer locks.Close(context.Background())
	lease, err := locks.Acquire(d.ctx, "dynamic-call")
	if err != nil {
		t.Fatal(err)
	}
	ctx := fencedsql.WithLease(d.ctx, lease)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, callErr := tx.ExecContext(ctx, "CALL note_it()")
	_, err2 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 222 WHERE id = 2")
	if err := lease.Release(d.ctx); err != nil {
		t.Fatal(err)
	}
	cerr := tx.Commit()
	b1, b2 := balanceOf(t, d, 1), balanceOf(t, d, 2)
	t.Logf("CALL: %v; write after it: %v; Commit: %v (%v); row 1 = %d, row 2 = %d", callErr, err2, cerr, fencedsql.CommitOutcome(cerr), b1, b2)
	if b2 == 222 || !errors.Is(err2, fencedsql.ErrUnsupported) {
		t.Errorf("the write after the CALL committed the transaction: %v (row 2 = %d), want refused unsent", err2, b2)
	}
	if b1 == 111 && (cerr == nil || fencedsql.CommitOutcome(cerr) == fencedsql.NotCommitted) {
		t.Errorf("row 1 is committed (by the CALL) but Commit answered %v (%v)", cerr, fencedsql.CommitOutcome(cerr))
	}
}

// TestDynamicStatementCommittingEndsTx: EXECUTE IMMEDIATE 'COMMIT' (or DDL, or a built
// string) and a compound statement that commits end the transaction: either the
// statement is refused unsent (its literal text is transaction control, or commits
// implicitly) and Rollback undoes the transaction's write, or it ends the transaction,
// the next write is refused and Rollback does not answer nil for writes it could not
// undo.
func TestDynamicStatementCommittingEndsTx(t *testing.T) {
	for name, s := range map[string]string{
		"execute_immediate_commit": "EXECUTE IMMEDIATE 'COMMIT'",
		"execute_immediate_ddl":    "EXECUTE IMMEDIATE 'CREATE TABLE zz (a INT)'",
		"execute_immediate_concat": "EXECUTE IMMEDIATE CONCAT('COM', 'MIT')",
		"compound_commit":          "BEGIN NOT ATOMIC COMMIT; END",
	} {
		t.Run(name, func(t *testing.T) {
			d := freshDB(t, mysqlBackend(), entry{setup: []string{"UPDATE accounts SET fence_token = 0"}})
			w := dynamicPool(t, d)
			ctx := fencedsql.WithToken(d.ctx, 5)
			tx, err := w.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, s)
			_, err2 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 222 WHERE id = 2")
			rerr := tx.Rollback()
			b1, b2 := balanceOf(t, d, 1), balanceOf(t, d, 2)
			t.Logf("%s: %v; write after it: %v; Rollback: %v; row 1 = %d, row 2 = %d", s, err, err2, rerr, b1, b2)
			if errors.Is(err, fencedsql.ErrUnsupported) {
				if b1 == 111 || b2 != 200 || rerr != nil {
					t.Errorf("%s refused (%v), but Rollback: %v; row 1 = %d, row 2 = %d, want both rolled back", s, err, rerr, b1, b2)
				}
				return
			}
			if b2 == 222 || !errors.Is(err2, fencedsql.ErrUnsupported) {
				t.Errorf("the write after %s: %v (row 2 = %d), want refused unsent", s, err2, b2)
			}
			if b1 == 111 && rerr == nil {
				t.Errorf("Rollback answered nil, but the write of row 1 was committed by %s", s)
			}
		})
	}
}

// TestDynamicCallKeepingTxCommits: a CALL that leaves the transaction open (the check
// answers 1) changes nothing: the transaction goes on and commits, whether the CALL
// ran through Exec or returned rows through Query.
func TestDynamicCallKeepingTxCommits(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{setup: []string{
		"UPDATE accounts SET fence_token = 0",
		"CREATE PROCEDURE note(k BIGINT) BEGIN UPDATE ledger SET note = 'x' WHERE id = k; SELECT k; END",
	}})
	w := dynamicPool(t, d)
	ctx := fencedsql.WithToken(d.ctx, 5)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "CALL note(1)"); err != nil {
		t.Fatalf("CALL through Exec: %v", err)
	}
	var k int64
	if err := tx.QueryRowContext(ctx, "CALL note(2)").Scan(&k); err != nil || k != 2 {
		t.Fatalf("CALL through Query: %d, %v", k, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
		t.Fatalf("write after the CALLs: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if b1 := balanceOf(t, d, 1); b1 != 111 {
		t.Errorf("row 1 = %d after Commit, want 111", b1)
	}
}

// TestDynamicQueryCommittingEndsTx: the same through Query: once the rows of the
// dynamic statement are closed, the transaction is found ended.
func TestDynamicQueryCommittingEndsTx(t *testing.T) {
	d := freshDB(t, mysqlBackend(), entry{setup: []string{
		"UPDATE accounts SET fence_token = 0",
		"CREATE PROCEDURE done_it() BEGIN COMMIT; SELECT 1; END",
	}})
	w := dynamicPool(t, d)
	ctx := fencedsql.WithToken(d.ctx, 5)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, "CALL done_it()")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	_ = rows.Close()
	_, err2 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 222 WHERE id = 2")
	cerr := tx.Commit()
	if b2 := balanceOf(t, d, 2); b2 == 222 || !errors.Is(err2, fencedsql.ErrUnsupported) {
		t.Errorf("the write after the CALL committed: %v (row 2 = %d), want refused unsent", err2, b2)
	}
	if fencedsql.CommitOutcome(cerr) != fencedsql.Unknown {
		t.Errorf("Commit: %v (%v), want outcome unknown", cerr, fencedsql.CommitOutcome(cerr))
	}
}

// TestDynamicCommitThenFailEndsTx: a dynamic statement that COMMITs and then fails (a
// SIGNAL after the COMMIT, in a procedure, a compound statement or a query's result
// sets) leaves the session in autocommit although it answers an error: the transaction
// is asked about after a failure too, so the later write is refused and Rollback does
// not answer nil for a write the COMMIT stored (red-team rt12f F2).
func TestDynamicCommitThenFailEndsTx(t *testing.T) {
	for name, s := range map[string]string{
		"compound": "BEGIN NOT ATOMIC EXECUTE IMMEDIATE CONCAT('COM','MIT'); SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'business error'; END",
		"call":     "CALL commit_fail()",
		"query":    "query:CALL commit_fail_rows()",
		// the error before any result set: Query itself fails
		"query_no_rows": "query:CALL commit_fail()",
	} {
		t.Run(name, func(t *testing.T) {
			d := freshDB(t, mysqlBackend(), entry{setup: []string{
				"UPDATE accounts SET fence_token = 0",
				"CREATE PROCEDURE commit_fail() BEGIN COMMIT; SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'business error'; END",
				"CREATE PROCEDURE commit_fail_rows() BEGIN SELECT 1; COMMIT; SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'business error'; END",
			}})
			w := dynamicPool(t, d)
			ctx := fencedsql.WithToken(d.ctx, 5)
			tx, err := w.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 111 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if q, ok := strings.CutPrefix(s, "query:"); ok {
				rows, qerr := tx.QueryContext(ctx, q)
				if qerr == nil {
					for rows.Next() {
					}
					for rows.NextResultSet() {
						for rows.Next() {
						}
					}
					rows.Close()
				}
			} else if _, err := tx.ExecContext(ctx, s); err == nil {
				t.Fatalf("%s: no error", s)
			}
			_, err2 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 222 WHERE id = 2")
			rerr := tx.Rollback()
			b1, b2 := balanceOf(t, d, 1), balanceOf(t, d, 2)
			if err2 == nil || b2 == 222 {
				t.Errorf("the write after %s: %v, row 2 = %d; want refused, nothing stored", s, err2, b2)
			}
			if rerr == nil && b1 == 111 {
				t.Errorf("Rollback answered nil, but the write of row 1 is committed")
			}
		})
	}
}
