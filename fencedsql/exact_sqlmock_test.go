package fencedsql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

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
