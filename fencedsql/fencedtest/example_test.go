package fencedtest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// Debit is business code: it takes amount from account id in a transaction bound to
// the fencing token its context carries.
func Debit(ctx context.Context, db *sql.DB, id, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, amount, id); err != nil {
		return err
	}
	return tx.Commit()
}

// A unit test of Debit, written in terms of Debit's own SQL. In a real test pass the
// *testing.T to fencedtest.New; an example has none, so exampleT stands in for it.
func Example() {
	t := &exampleT{}
	defer t.cleanup()

	db, mock := fencedtest.New(t, postgres.Dialect, fencedsql.Guard("accounts"))
	const debit = `UPDATE accounts SET balance = balance - $1 WHERE id = $2`
	ctx := fencedsql.WithToken(context.Background(), 7)

	// The happy path: the wrapper sends the fenced UPDATE with token 7.
	mock.ExpectBegin()
	mock.ExpectFencedExec(debit, 7, 30, 42).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectCommit()
	fmt.Println("debit:", Debit(ctx, db, 42, 30))

	// A newer holder already wrote account 42: the database refuses token 7.
	mock.ExpectBegin()
	mock.ExpectFencedRejection(debit, 7, 30, 42)
	mock.ExpectRollback()
	err := Debit(ctx, db, 42, 30)
	fmt.Println("fenced:", errors.Is(err, fencedsql.ErrFenced))

	fmt.Println("expectations met:", mock.ExpectationsWereMet() == nil)
	// Output:
	// debit: <nil>
	// fenced: true
	// expectations met: true
}

// What the wrapper sends for a statement, for expectations written by hand.
func ExampleMock_Statements() {
	t := &exampleT{}
	defer t.cleanup()

	_, mock := fencedtest.New(t, postgres.Dialect, fencedsql.Guard("accounts"))
	ctx := fencedsql.WithToken(context.Background(), 7)
	stmts, err := mock.Statements(ctx, false, false, `DELETE FROM accounts WHERE id = $1`, 42)
	if err != nil {
		panic(err)
	}
	for _, s := range stmts {
		fmt.Println(s)
	}
	// Output:
	// BEGIN
	// EXEC UPDATE accounts SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1 [42 7]
	// EXEC DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2 [42 7]
	// COMMIT
}

// exampleT stands in for the *testing.T a test passes to fencedtest.New.
type exampleT struct{ cleanups []func() }

func (*exampleT) Helper()                           {}
func (*exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
