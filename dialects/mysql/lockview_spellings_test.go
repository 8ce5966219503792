package mysql_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A red-team pass: MariaDB spellings of a table reference the planner's relation list
// (plan.lockThrough) does not name: a parenthesised reference, ODBC's { OJ … } join,
// the ".name" form. Each locks accounts' rows through a view with a token and nothing
// claims them; each must be refused.
func TestLockingReadThroughViewSpellingsMariaDB(t *testing.T) {
	raw, db, ctx := txEnv(t, "")
	for _, q := range []string{
		"CREATE VIEW av AS SELECT id, balance FROM accounts",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for _, q := range []string{
		"SELECT id, balance FROM (av) WHERE id = 1 FOR UPDATE",
		"SELECT a.id FROM (av a, other o) WHERE a.id = 1 AND o.id = 1 FOR UPDATE",
		"SELECT a.id FROM { OJ av a LEFT OUTER JOIN other o ON o.id = a.id } WHERE a.id = 1 FOR UPDATE",
		"SELECT id, balance FROM .av WHERE id = 1 FOR UPDATE",
		"SELECT a.id FROM other o, (av a) WHERE a.id = 1 FOR UPDATE",
		"SELECT id FROM (accounts) WHERE id = 1 FOR UPDATE",
		"SELECT id FROM .accounts WHERE id = 1 FOR UPDATE",
		"SELECT a.id FROM { OJ accounts a LEFT OUTER JOIN other o ON o.id = a.id } WHERE a.id = 1 FOR UPDATE",
	} {
		tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, q)
		if err == nil {
			rows.Close()
			_, lerr := raw.ExecContext(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE NOWAIT")
			t.Errorf("%s with a token: accepted (row 1 locked by it: %v), want ErrUnsupported", q, lerr != nil)
		} else if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s with a token: %v, want ErrUnsupported", q, err)
		}
		_ = tx.Rollback()
	}
}

// A red-team pass: InnoDB rolls back the whole transaction on DB_RECORD_CHANGED (error 1020,
// "Record has changed since last read", under the session variable
// innodb_snapshot_isolation, MariaDB 10.6.18+/10.11.8+) and on DB_LOCK_TABLE_FULL
// (1206), as on a deadlock (row_mysql_handle_errors), and leaves the session in
// autocommit. Classify marks only 1213 and 1205: after a 1020 the wrapper goes on
// using the transaction, its next fenced write commits on its own, and the caller's
// Rollback undoes nothing (Commit would report success for writes the server undid).
func TestServerRollbackRecordChangedMariaDB(t *testing.T) {
	raw, db, ctx := txEnv(t, "innodb_snapshot_isolation=ON")
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var on string
	if err := tx.QueryRowContext(ctx, "SELECT @@session.innodb_snapshot_isolation").Scan(&on); err != nil {
		t.Skip("innodb_snapshot_isolation:", err)
	}
	var b int64
	// A plain read opens the read view.
	if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "UPDATE accounts SET balance = 101 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "UPDATE accounts SET balance = 555 WHERE id = 1")
	t.Logf("snapshot isolation %s; write after the concurrent change: %v", on, err)
	if err == nil {
		t.Skip("no 1020 on this server")
	}
	// The wrapper still uses the transaction.
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 556 WHERE id = 2"); err != nil {
		t.Logf("later write refused: %v", err)
	}
	_ = tx.Rollback()
	if b := balance(t, raw, 2); b == 556 {
		t.Fatalf("after the server rolled back the transaction (1020) the wrapper sent its next write, which committed on its own; Rollback undid nothing (balance 2 = %d)", b)
	}
}
