package redteam

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// SQLite ends an explicit transaction by itself on several errors and runs the
// connection in autocommit from then on: a constraint failure under OR ROLLBACK, a
// trigger's RAISE(ROLLBACK), an interrupted INSERT/UPDATE/DELETE, SQLITE_FULL (and may
// on SQLITE_IOERR, SQLITE_BUSY, SQLITE_NOMEM). A red-team pass found the wrapper did
// not notice (only MySQL/MariaDB's 1213/1020/1205 were judged): the caller's later
// statements "in the transaction" committed one by one, tx.Rollback could not undo
// them, and Commit's lease check was bypassed. The SQLite dialect now marks every
// error RollbackIf and answers InTransaction (a BEGIN probe, run only after a failed
// statement): the wrapper ends the transaction as it does a MariaDB deadlock victim.

// txEndRow reads one row's balance on the raw pool.
func txEndRow(t *testing.T, d *dbs, id int) int64 {
	t.Helper()
	var b int64
	if err := d.raw.QueryRowContext(d.ctx, "SELECT balance FROM accounts WHERE id = ?", id).Scan(&b); err != nil {
		t.Fatalf("read row %d: %v", id, err)
	}
	return b
}

// checkTxEnded is what follows a statement (whose error is stmtErr) after which SQLite
// rolled the transaction back: the next write is refused unsent (ErrUnsupported, the
// statement's error reachable), Commit (or Rollback) reports the transaction not
// committed, nothing of the transaction is stored (row 2 written before, row 3 after),
// and the connection goes back to the pool in autocommit (the probe left no
// transaction open: a later write on it commits).
func checkTxEnded(t *testing.T, d *dbs, w *sql.DB, tx *sql.Tx, ctx context.Context, stmtErr error, commit bool) {
	t.Helper()
	_, err3 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 333 WHERE id = 3")
	if !errors.Is(err3, fencedsql.ErrUnsupported) || !errors.Is(err3, stmtErr) {
		t.Errorf("the write after the transaction ended: %v, want ErrUnsupported wrapping the statement's error (%v)", err3, stmtErr)
	}
	if commit {
		if err := tx.Commit(); !errors.Is(err, fencedsql.ErrNotCommitted) || !errors.Is(err, stmtErr) {
			t.Errorf("Commit: %v, want ErrNotCommitted wrapping the statement's error", err)
		}
	} else if err := tx.Rollback(); err != nil {
		t.Errorf("Rollback of a transaction SQLite already rolled back: %v, want nil", err)
	}
	if b := txEndRow(t, d, 3); b != 300 {
		t.Errorf("row 3 = %d after the transaction ended: a statement after SQLite's rollback committed on its own", b)
	}
	if b := txEndRow(t, d, 2); b != 200 {
		t.Errorf("row 2 = %d: the transaction's write before the rollback is stored", b)
	}
	if _, err := w.ExecContext(fencedsql.WithToken(d.ctx, 100), "UPDATE accounts SET balance = 444 WHERE id = 4"); err != nil {
		t.Fatalf("autocommit write on the pool afterwards: %v", err)
	}
	if b := txEndRow(t, d, 4); b != 444 {
		t.Errorf("row 4 = %d after an autocommit write on the pool's one connection: it was left inside a transaction", b)
	}
}

// txEndOpen opens the fenced pool (one connection) and begins a token-bound transaction
// that writes row 2.
func txEndOpen(t *testing.T, d *dbs) (*sql.DB, *sql.Tx, context.Context) {
	t.Helper()
	w, _ := d.open(true, nil)
	w.SetMaxOpenConns(1)
	ctx := fencedsql.WithToken(d.ctx, 100)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 222 WHERE id = 2"); err != nil {
		t.Fatalf("fenced write of row 2: %v", err)
	}
	return w, tx, ctx
}

// A fenced UPDATE OR ROLLBACK whose fence fires (a row of a newer holder): ErrFenced,
// and SQLite rolled the whole transaction back. (OR ROLLBACK stays accepted by the
// planner: the ended transaction is detected, as for RAISE(ROLLBACK) in a trigger.)
func TestSQLiteOrRollbackEndsTransaction(t *testing.T) {
	for name, stmt := range map[string]string{
		"one_row":  "UPDATE OR ROLLBACK accounts SET balance = 0 WHERE id = 1",
		"two_rows": "UPDATE OR ROLLBACK accounts SET balance = 0 WHERE id IN (1, 4)",
	} {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/commit=%v", name, commit), func(t *testing.T) {
				d := freshDB(t, sqliteBackend(), entry{setup: []string{"UPDATE accounts SET fence_token = 200 WHERE id = 1"}})
				w, tx, ctx := txEndOpen(t, d)
				_, err := tx.ExecContext(ctx, stmt)
				if !errors.Is(err, fencedsql.ErrFenced) {
					t.Fatalf("%s: got %v, want ErrFenced", stmt, err)
				}
				checkTxEnded(t, d, w, tx, ctx, err, commit)
			})
		}
	}
}

// longWrite is a fenced UPDATE that runs long enough to be interrupted.
const longWrite = "UPDATE accounts SET balance = (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 500000000) SELECT count(*) FROM c) WHERE id = 1"

// A statement context that ends while a fenced write runs in the transaction (a
// per-statement timeout): modernc.org/sqlite interrupts it, and SQLite rolls back the
// whole transaction of an interrupted INSERT/UPDATE/DELETE.
func TestSQLiteInterruptEndsTransaction(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{})
	w, tx, ctx := txEndOpen(t, d)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := tx.ExecContext(short, longWrite)
	cancel()
	if err == nil {
		t.Skip("the long write finished; no interrupt")
	}
	checkTxEnded(t, d, w, tx, ctx, err, true)
}

// SQLITE_FULL (here PRAGMA max_page_count, which the planner passes): SQLite rolls back
// the whole transaction.
func TestSQLiteFullEndsTransaction(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{})
	w, tx, ctx := txEndOpen(t, d)
	var pages int
	if err := tx.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages)); err != nil {
		t.Fatalf("PRAGMA max_page_count through the fenced pool: %v", err)
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO ledger (id, account_id, note) VALUES (50, 1, printf('%.*c', 200000, 'x'))")
	if err == nil {
		t.Fatal("the write that fills the database succeeded")
	}
	checkTxEnded(t, d, w, tx, ctx, err, true)
}

// A business-rule trigger's RAISE(ROLLBACK, …) (on an unguarded table): SQLite rolls
// back the whole transaction.
func TestSQLiteRaiseRollbackEndsTransaction(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{setup: []string{
		"CREATE TRIGGER no_negative BEFORE UPDATE ON ledger WHEN NEW.amount < -100 BEGIN SELECT RAISE(ROLLBACK, 'amount below -100'); END",
	}})
	w, tx, ctx := txEndOpen(t, d)
	_, err := tx.ExecContext(ctx, "UPDATE ledger SET amount = -500 WHERE id = 1")
	if err == nil {
		t.Fatal("the write the rule refuses succeeded")
	}
	checkTxEnded(t, d, w, tx, ctx, err, false)
}

// With a lease: after SQLite ended the transaction (an interrupted write), the
// caller's next write used to run in autocommit while the lease was held, and Commit
// after the lease was lost answered ErrLeaseLost/ErrNotCommitted for a write already
// committed. The write is now refused, and Commit's NotCommitted is true.
func TestSQLiteEndedTransactionUnderLease(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{setup: []string{"UPDATE accounts SET fence_token = 0"}}) // memlock tokens start at 1
	w, _ := d.open(true, nil)
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(30*time.Second))
	defer locks.Close(context.Background())
	lease, err := locks.Acquire(d.ctx, "txend-k")
	if err != nil {
		t.Fatal(err)
	}
	ctx := fencedsql.WithLease(d.ctx, lease)
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err = tx.ExecContext(short, longWrite)
	cancel()
	if err == nil {
		t.Skip("the long write finished; no interrupt")
	}
	_, err3 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 333 WHERE id = 3")
	if !errors.Is(err3, fencedsql.ErrUnsupported) {
		t.Errorf("write of row 3 after SQLite ended the transaction: %v, want ErrUnsupported", err3)
	}
	if err := lease.Release(d.ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	cerr := tx.Commit()
	if !errors.Is(cerr, fencedsql.ErrNotCommitted) {
		t.Errorf("Commit: %v, want ErrNotCommitted", cerr)
	}
	if b := txEndRow(t, d, 3); b != 300 {
		t.Errorf("Commit reported %v but the transaction's write of row 3 is committed (balance %d)", cerr, b)
	}
}

// The control: errors after which SQLite keeps the transaction (a fenced UPDATE's
// ErrFenced under the default ABORT, a duplicate key, a failed read, a syntax error
// passed through) do not end it: the probe finds the transaction open, the later
// write and the Commit go through.
func TestSQLiteStatementErrorKeepsTransaction(t *testing.T) {
	d := freshDB(t, sqliteBackend(), entry{setup: []string{"UPDATE accounts SET fence_token = 200 WHERE id = 1"}})
	_, tx, ctx := txEndOpen(t, d)
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 0 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale write of row 1: %v, want ErrFenced", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO accounts (id, balance) VALUES (2, 1)"); !errors.Is(err, fencedsql.ErrDuplicate) {
		t.Fatalf("duplicate insert: %v, want ErrDuplicate", err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger (id, account_id) VALUES (1, 1)"); err == nil {
		t.Fatal("duplicate insert into ledger succeeded")
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	var n int64
	err := tx.QueryRowContext(short, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 500000000) SELECT count(*) FROM c").Scan(&n)
	cancel()
	t.Logf("interrupted read: %v", err)
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 333 WHERE id = 3"); err != nil {
		t.Fatalf("write after the failed statements: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if b2, b3 := txEndRow(t, d, 2), txEndRow(t, d, 3); b2 != 222 || b3 != 333 {
		t.Errorf("rows 2 and 3 = %d, %d after Commit, want 222, 333", b2, b3)
	}
}
