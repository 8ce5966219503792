package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// A locking read that names no guarded table, carrying a token under the lazy schema
// checks, asks the dialect once per pool and relation name whether the name is a view
// over a guarded table (dialect.ViewLockChecker): a view is refused, nothing sent, and
// asked again never; a table is sent as written. Without a token, or with the checks
// off (go-sqlmock users), no catalog query is sent.
func TestSqlmockLockingReadThroughView(t *testing.T) {
	d := postgres.Dialect
	vq, _ := d.(dialect.ViewLockChecker).ViewLockQuery(dialect.Relation{Text: "av"}, []dialect.TableName{{Name: "accounts"}})
	one := func(n int64) *sqlmock.Rows { return sqlmock.NewRows([]string{"v"}).AddRow(n) }

	db, mock := newMockDB(t, d, fencedsql.WithSchemaCheck(true))
	expectOpenAccounts(mock, d)
	mock.ExpectBegin()
	expectNamePath(mock, d)
	mock.ExpectQuery(vq).WithArgs("av", "accounts").WillReturnRows(one(1))
	mock.ExpectQuery(vq).WithArgs("other", "accounts").WillReturnRows(one(0))
	mock.ExpectQuery(`SELECT id FROM other FOR UPDATE`).WillReturnRows(sqlmock.NewRows([]string{"id"}))
	mock.ExpectQuery(`SELECT id FROM other FOR UPDATE`).WillReturnRows(sqlmock.NewRows([]string{"id"}))
	mock.ExpectRollback()
	mock.ExpectQuery(`SELECT id FROM av FOR UPDATE`).WillReturnRows(sqlmock.NewRows([]string{"id"}))

	ctx := withTok(20)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second time from the cache
		if _, err := tx.QueryContext(ctx, `SELECT id FROM av FOR UPDATE`); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("locking read of a view over a guarded table with a token: %v, want ErrUnsupported", err)
		}
	}
	for i := 0; i < 2; i++ {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM other FOR UPDATE`)
		if err != nil {
			t.Fatalf("locking read of a table with a token: %v", err)
		}
		rows.Close()
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(context.Background(), `SELECT id FROM av FOR UPDATE`)
	if err != nil {
		t.Fatalf("without a token: %v", err)
	}
	rows.Close()
	mockMet(t, mock)

	// The checks off: sent as written, no catalog query.
	db, mock = newMockDB(t, d)
	mock.ExpectBegin()
	mock.ExpectQuery(`SELECT id FROM av FOR UPDATE`).WillReturnRows(sqlmock.NewRows([]string{"id"}))
	mock.ExpectCommit()
	tx, err = db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err = tx.QueryContext(ctx, `SELECT id FROM av FOR UPDATE`); err != nil {
		t.Fatalf("schema check off: %v", err)
	}
	rows.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)
}
