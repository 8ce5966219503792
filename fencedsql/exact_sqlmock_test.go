package fencedsql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// A DELETE whose second statement selects other rows than its fencing UPDATE stamped is
// refused at run time: in the wrapper's own transaction it is rolled back; in the
// caller's, Commit rolls back and returns the same error.
func TestSqlmockDeleteInexactRefused(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name+"/own tx", func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in, pre, preArgs, del, delArgs := deleteSQL(dc.name)
			mock.ExpectBegin()
			mock.ExpectExec(pre).WithArgs(preArgs...).WillReturnResult(sqlmock.NewResult(0, 2))
			mock.ExpectExec(del).WithArgs(delArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectRollback()
			_, err := db.ExecContext(withTok(7), in, 42, "bob")
			if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "selected 1 rows after its fencing UPDATE stamped 2") {
				t.Fatalf("err = %v, want the inexact DELETE refused", err)
			}
			mockMet(t, mock)
		})
		t.Run(dc.name+"/caller tx", func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in, pre, preArgs, del, delArgs := deleteSQL(dc.name)
			mock.ExpectBegin()
			mock.ExpectExec(pre).WithArgs(preArgs...).WillReturnResult(sqlmock.NewResult(0, 3))
			mock.ExpectExec(del).WithArgs(delArgs...).WillReturnResult(sqlmock.NewResult(0, 0))
			mock.ExpectRollback()
			tx, err := db.BeginTx(withTok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(withTok(7), in, 42, "bob"); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("Exec err = %v, want ErrUnsupported", err)
			}
			if err := tx.Commit(); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("Commit after an inexact DELETE = %v, want the refusal (and a rollback)", err)
			}
			mockMet(t, mock)
		})
	}
}

// A claim's read is counted against the rows its fencing UPDATE stamped however the
// caller reads it: QueryRow's Scan reads one row and closes, never reaching io.EOF. A
// row past the rows stamped fails at once (it is not the claim's); rows the caller
// leaves unread are read on Close, and fewer than stamped fail Close, whose error
// Scan returns. Either way the transaction can only roll back.
func TestSqlmockClaimCountedUnderScan(t *testing.T) {
	const (
		in   = "SELECT balance FROM accounts WHERE owner = ? FOR UPDATE"
		pre  = "UPDATE accounts SET `version` = accounts.`version` + 1, `fence_token` = CASE WHEN accounts.`fence_token` <= ? THEN ? ELSE NULL END WHERE owner = ?"
		read = "SELECT balance FROM accounts WHERE (owner = ?) AND accounts.`fence_token` = ? FOR UPDATE"
	)
	for _, c := range []struct {
		name          string
		stamped, read int
		ok            bool
	}{
		{"more read than stamped", 1, 2, false},
		{"fewer read than stamped", 2, 1, false},
		{"as many as stamped", 2, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, mock := newMockDB(t, mysqldialect.Dialect)
			mock.ExpectBegin()
			mock.ExpectExec(pre).WithArgs(7, 7, "bob").WillReturnResult(sqlmock.NewResult(0, int64(c.stamped)))
			rows := sqlmock.NewRows([]string{"balance"})
			for i := range c.read {
				rows.AddRow(10 + i)
			}
			mock.ExpectQuery(read).WithArgs("bob", 7).WillReturnRows(rows)
			if c.ok {
				mock.ExpectCommit()
			} else {
				mock.ExpectRollback()
			}
			tx, err := db.BeginTx(withTok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			var bal int
			err = tx.QueryRowContext(withTok(7), in, "bob").Scan(&bal)
			if c.ok != (err == nil) || !c.ok && !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("Scan: %v (balance %d), want ok %v or ErrUnsupported", err, bal, c.ok)
			}
			if err := tx.Commit(); c.ok != (err == nil) {
				t.Fatalf("Commit: %v, want ok %v", err, c.ok)
			}
			mockMet(t, mock)
		})
	}
}
