package fencedsql_test

import (
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
)

// An application's prepared guarded write follows its connection's name resolution
// (stmtnames.go; docs/design.md G13, "Prepared statements across a change of name
// resolution"): executions on a connection whose resolution does not move send the
// statement prepared once, with nothing more; after a USE on the connection the
// statement's forms are closed and prepared again before the next execution, so they
// run on the table the checks judged.
func TestSqlmockPreparedAcrossUseReprepares(t *testing.T) {
	db, mock := newMockDB(t, mysqldialect.Dialect)
	out := "UPDATE accounts SET balance = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?"
	prep := mock.ExpectPrepare(out).WillBeClosed()
	prep.ExpectExec().WithArgs(int64(100), int64(7), int64(7), int64(42)).WillReturnResult(sqlmock.NewResult(0, 1))
	prep.ExpectExec().WithArgs(int64(100), int64(8), int64(8), int64(42)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectExec("USE other").WillReturnResult(sqlmock.NewResult(0, 0))
	again := mock.ExpectPrepare(out)
	again.ExpectExec().WithArgs(int64(100), int64(9), int64(9), int64(42)).WillReturnResult(sqlmock.NewResult(0, 1))
	again.ExpectExec().WithArgs(int64(100), int64(10), int64(10), int64(42)).WillReturnResult(sqlmock.NewResult(0, 1))

	stmt, err := db.Prepare("UPDATE accounts SET balance = ? WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for _, tk := range []uint64{7, 8} {
		if _, err := stmt.ExecContext(withTok(tk), 100, 42); err != nil {
			t.Fatalf("token %d: %v", tk, err)
		}
	}
	if _, err := db.Exec("USE other"); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []uint64{9, 10} {
		if _, err := stmt.ExecContext(withTok(tk), 100, 42); err != nil {
			t.Fatalf("token %d after USE: %v", tk, err)
		}
	}
	mockMet(t, mock)
}
