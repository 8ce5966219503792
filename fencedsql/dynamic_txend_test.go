package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// TestDynamicStatementTxProbeMock: under WithDynamicSQL, only a dynamic statement that
// succeeded inside a transaction is followed by the dialect's in-transaction query
// (other statements send nothing more); when it answers 0 the statement reports the
// transaction ended (outcome Unknown), the next statement is refused unsent, and
// Commit sends only a ROLLBACK and reports Unknown.
func TestDynamicStatementTxProbeMock(t *testing.T) {
	db, mock := fencedtest.New(t, mysql.Dialect, fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
	ctx := context.Background()
	probe := mysql.Dialect.(interface{ TxOpenQuery() string }).TxOpenQuery()
	mock.ExpectBegin()
	mock.ExpectExec("INSERT INTO other VALUES (1)").WillReturnResult(sqlmock.NewResult(0, 1))
	// Each dynamic statement is marked by a savepoint (dialect.TxMarker), released after it.
	mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("CALL keep()").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectQuery(probe).WillReturnRows(sqlmock.NewRows([]string{"t"}).AddRow("1"))
	mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("CALL end_it()").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectQuery(probe).WillReturnRows(sqlmock.NewRows([]string{"t"}).AddRow("0"))
	mock.ExpectRollback()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO other VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "CALL keep()"); err != nil {
		t.Fatalf("a CALL that keeps the transaction: %v", err)
	}
	requireEndedBehind(t, tx, mock, "CALL end_it()")
}

// requireEndedBehind runs call, a dynamic statement that ends the wrapper's
// transaction, in tx and checks that it reports outcome Unknown, that the next
// statement is refused unsent, that Commit reports Unknown, and that the mock saw
// exactly what it expected.
func requireEndedBehind(t *testing.T, tx *sql.Tx, mock sqlmock.Sqlmock, call string) {
	t.Helper()
	ctx := context.Background()
	if _, err := tx.ExecContext(ctx, call); fencedsql.CommitOutcome(err) != fencedsql.Unknown {
		t.Fatalf("%s, after which the wrapper's transaction is gone: %v; want an error whose outcome is Unknown", call, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO other VALUES (2)"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("the next statement: %v; want refused unsent", err)
	}
	if cerr := tx.Commit(); fencedsql.CommitOutcome(cerr) != fencedsql.Unknown {
		t.Fatalf("Commit: %v; want outcome Unknown", cerr)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}

// TestDynamicStatementSavepointGoneMock (red-team rt28a F1): a dynamic statement after
// which the savepoint set before it is gone ended the wrapper's transaction, even when
// the server is inside a transaction again (COMMIT; START TRANSACTION in a procedure):
// the statement reports it (outcome Unknown), no in-transaction query is needed, the
// next statement is refused unsent, and Commit sends only a ROLLBACK and reports
// Unknown.
func TestDynamicStatementSavepointGoneMock(t *testing.T) {
	db, mock := fencedtest.New(t, mysql.Dialect, fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
	ctx := context.Background()
	mock.ExpectBegin()
	mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("CALL reopen()").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnError(errors.New("Error 1305 (42000): SAVEPOINT fencedsql_dyn_# does not exist"))
	mock.ExpectRollback()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	requireEndedBehind(t, tx, mock, "CALL reopen()")
}

// TestDynamicStatementOutsideTxMock (red-team rt28a F2): outside a transaction a
// dynamic statement is followed by a savepoint set and released; a release that
// succeeds means the statement left a transaction open: it is rolled back, the
// statement fails (ErrUnsupported, outcome Unknown), and the connection answers
// driver.ErrBadConn from then on, nothing sent. A release that fails (autocommit)
// leaves the statement's result as it is.
func TestDynamicStatementOutsideTxMock(t *testing.T) {
	db, mock := fencedtest.New(t, mysql.Dialect, fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
	ctx := context.Background()
	mock.ExpectExec("CALL plain()").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnError(errors.New("Error 1305 (42000): SAVEPOINT fencedsql_dyn_# does not exist"))
	mock.ExpectExec("CALL opens()").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectExec("ROLLBACK").WillReturnResult(sqlmock.NewResult(0, 0))
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "CALL plain()"); err != nil {
		t.Fatalf("a CALL that leaves no transaction: %v", err)
	}
	_, err = conn.ExecContext(ctx, "CALL opens()")
	if !errors.Is(err, fencedsql.ErrUnsupported) || fencedsql.CommitOutcome(err) != fencedsql.Unknown {
		t.Fatalf("a CALL that leaves a transaction open: %v; want ErrUnsupported, outcome Unknown", err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO other VALUES (2)"); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("the next statement: %v; want driver.ErrBadConn, nothing sent", err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}
