package ormtest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// setupWith is setup with extra DDL run on the plain pool after the table is created
// and guarded, and extra parameters on the fenced pool's DSN ("" for none).
func setupWith(t *testing.T, b backend, extra []string, params string) *env {
	t.Helper()
	dsn := b.dsn(t)
	raw, err := sql.Open(b.raw, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := raw.ExecContext(ctx, b.ddl); err != nil {
		t.Fatalf("create table: %v", err)
	}
	fencetest.Guard(t, ctx, raw, b.dialect, schema.GuardSpec{Table: "accounts"})
	for _, q := range extra {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	fdsn := withParam(dsn, "fenced_tables=accounts")
	if params != "" {
		fdsn = withParam(fdsn, params)
	}
	db, err := sql.Open(b.fenced, fdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &env{b: b, db: db, raw: raw}
}

// kidsDDL is a child table whose foreign key refuses the DELETE of a referenced account.
var kidsDDL = map[string]string{
	"postgres": `CREATE TABLE kids (id BIGINT PRIMARY KEY, account_id BIGINT REFERENCES accounts(id))`,
	"mysql":    `CREATE TABLE kids (id BIGINT PRIMARY KEY, account_id BIGINT, FOREIGN KEY (account_id) REFERENCES accounts(id)) ENGINE=InnoDB`,
	"sqlite":   `CREATE TABLE kids (id BIGINT PRIMARY KEY, account_id BIGINT REFERENCES accounts(id))`,
}

// wantCannotCommit checks that stmtErr, the error of a two-statement write or read that
// failed after its fencing UPDATE, says so, that commitErr is NotCommitted, and that the
// row is as it was before the transaction.
func wantCannotCommit(t *testing.T, e *env, id int64, before dbRow, stmtErr, commitErr error) {
	t.Helper()
	if stmtErr == nil {
		t.Fatal("the database did not refuse the statement")
	}
	if !strings.Contains(stmtErr.Error(), "can no longer commit") {
		t.Errorf("the statement's error does not say that the transaction can no longer commit: %v", stmtErr)
	}
	if !errors.Is(commitErr, fencedsql.ErrNotCommitted) {
		t.Errorf("commit after the failed statement: %v, want ErrNotCommitted", commitErr)
	}
	if after := e.row(t, id); after != before {
		t.Errorf("the failed statement's stamp was committed: before %v, after %v", before, after)
	}
}

// TestFailedTwoStepDeleteCannotCommit: a two-statement DELETE (the fencing UPDATE, then
// the DELETE) that the database refuses inside the caller's transaction — a user's
// BEFORE DELETE trigger, a foreign key — leaves the UPDATE's stamp in the transaction
// on SQLite and MariaDB, which undo only the failed statement. The transaction can
// then only roll back: an application that handles the error and commits (GORM's
// "delete, else archive") gets NotCommitted, and the row keeps its token and version.
func TestFailedTwoStepDeleteCannotCommit(t *testing.T) {
	t.Run("sqlite/trigger", func(t *testing.T) {
		b := backendNamed("sqlite")
		e := setupWith(t, b, []string{
			`CREATE TRIGGER no_delete_rich BEFORE DELETE ON accounts WHEN OLD.balance > 50 BEGIN SELECT RAISE(ABORT, 'account has a balance'); END`,
		}, "")
		gdb := openGORM(t, e, false)
		id := newID()
		before := e.seed(t, id, tokOld) // balance 100
		var delErr error
		err := gdb.WithContext(fencedsql.WithToken(testCtx(t), tokMine)).Transaction(func(tx *gorm.DB) error {
			delErr = tx.Unscoped().Delete(&gAccountRW{ID: id}).Error
			return nil // handled: the application commits its other work
		})
		wantCannotCommit(t, e, id, before, delErr, err)
	})
	for _, bn := range []string{"sqlite", "mysql"} {
		t.Run(bn+"/foreign_key", func(t *testing.T) {
			b := backendNamed(bn)
			params := "_pragma=foreign_keys(1)"
			if b.my() {
				params = "fenced_schema_check=false" // no one-statement DELETE: the two statements
			}
			e := setupWith(t, b, []string{kidsDDL[bn]}, params)
			id := newID()
			before := e.seed(t, id, tokOld)
			if _, err := e.raw.Exec(`INSERT INTO kids (id, account_id) VALUES (?, ?)`, id, id); err != nil {
				t.Fatal(err)
			}
			ctx := fencedsql.WithToken(testCtx(t), tokMine)
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, delErr := tx.ExecContext(ctx, `DELETE FROM accounts WHERE id = ?`, id)
			wantCannotCommit(t, e, id, before, delErr, tx.Commit())
		})
	}
	// PostgreSQL aborts the transaction on the failed DELETE itself: the wrapper leaves
	// it as it is, and a ROLLBACK TO a savepoint set before the DELETE undoes both
	// statements and lets the transaction commit.
	t.Run("postgres/foreign_key", func(t *testing.T) {
		b := backendNamed("postgres")
		e := setupWith(t, b, []string{kidsDDL["postgres"]}, "fenced_schema_check=false")
		id := newID()
		before := e.seed(t, id, tokOld)
		if _, err := e.raw.Exec(`INSERT INTO kids (id, account_id) VALUES ($1, $2)`, id, id); err != nil {
			t.Fatal(err)
		}
		ctx := fencedsql.WithToken(testCtx(t), tokMine)
		tx, err := e.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `SAVEPOINT before_delete`); err != nil {
			t.Fatal(err)
		}
		_, delErr := tx.ExecContext(ctx, `DELETE FROM accounts WHERE id = $1`, id)
		if delErr == nil || strings.Contains(delErr.Error(), "can no longer commit") {
			t.Fatalf("DELETE of a referenced row: %v, want the foreign key's error as it is", delErr)
		}
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT before_delete`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET owner = 'archived' WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatalf("commit after ROLLBACK TO the savepoint: %v", err)
		}
		if after := e.row(t, id); after.Owner.String != "archived" || after.Version != before.Version+1 || after.Token != int64(tokMine) {
			t.Errorf("row after the archive: %v (before %v)", after, before)
		}
	})
}

// TestFailedTwoStepClaimCannotCommit: MariaDB's claim is two statements (the fencing
// UPDATE, then the caller's locking read); a read MariaDB then rejects (its select
// list names a column the table does not have: the claim's UPDATE has no select list)
// leaves the claim's stamp in the transaction, which can then only roll back. (A
// locking clause MariaDB does not parse, such as ent's FOR UPDATE OF, is refused before
// anything is sent: mysql: TestUnknownLockingClauseRefusedBeforeSending.)
func TestFailedTwoStepClaimCannotCommit(t *testing.T) {
	b := backendNamed("mysql")
	e := setupWith(t, b, nil, "")
	id := newID()
	before := e.seed(t, id, tokOld)
	ctx := fencedsql.WithToken(testCtx(t), tokNewer)
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	readErr := tx.QueryRowContext(ctx, "SELECT `no_such_column` FROM `accounts` WHERE `id` = ? FOR UPDATE", id).Scan(&got)
	wantCannotCommit(t, e, id, before, readErr, tx.Commit())
}

// backendNamed returns the backend called name.
func backendNamed(name string) backend {
	for _, b := range backends {
		if b.name == name {
			return b
		}
	}
	panic("no backend " + name)
}
