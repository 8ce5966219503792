package fencedsql_test

import (
	"context"
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
	mock.ExpectExec("CALL keep()").WillReturnResult(sqlmock.NewResult(0, 0))
	mock.ExpectQuery(probe).WillReturnRows(sqlmock.NewRows([]string{"t"}).AddRow("1"))
	mock.ExpectExec("CALL end_it()").WillReturnResult(sqlmock.NewResult(0, 0))
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
	if _, err := tx.ExecContext(ctx, "CALL end_it()"); fencedsql.CommitOutcome(err) != fencedsql.Unknown {
		t.Fatalf("a CALL after which the server is outside any transaction: %v; want an error whose outcome is Unknown", err)
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
