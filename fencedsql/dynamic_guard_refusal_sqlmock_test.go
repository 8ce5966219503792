package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// TestDynamicGuardRefusalTypedSqlmock (red-team rt55b F1): a statement the wrapper
// cannot attribute to a guarded table (a CALL under WithDynamicSQL) that the database
// guards refuse with a NOT NULL violation on a guarded table's token column gets
// ErrFenced (the driver's error still reachable), on MySQL/MariaDB (1048 names only
// the column) and PostgreSQL (23502 names the table too); a NOT NULL violation of
// another column, or of another table's column of that name, is the caller's own
// error, unchanged.
func TestDynamicGuardRefusalTypedSqlmock(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		d      dialect.Dialect
		err    error
		fenced bool
	}{
		{"mysql_token", mysql.Dialect, &gomysql.MySQLError{Number: 1048, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Column 'fence_token' cannot be null"}, true},
		{"mysql_other_column", mysql.Dialect, &gomysql.MySQLError{Number: 1048, Message: "Column 'owner' cannot be null"}, false},
		{"postgres_token", postgres.Dialect, &pgconn.PgError{Code: "23502", ColumnName: "fence_token", TableName: "accounts"}, true},
		{"postgres_other_table", postgres.Dialect, &pgconn.PgError{Code: "23502", ColumnName: "fence_token", TableName: "audit"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, mock := fencedtest.New(t, c.d, fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
			mock.ExpectExec("CALL revive()").WillReturnError(c.err)
			if _, ok := c.d.(dialect.TxMarker); ok {
				mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
				mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnError(errors.New("Error 1305 (42000): SAVEPOINT fencedsql_dyn_# does not exist"))
			}
			_, err := db.ExecContext(ctx, "CALL revive()")
			if got := errors.Is(err, fencedsql.ErrFenced); got != c.fenced {
				t.Fatalf("err = %v; ErrFenced %v, want %v", err, got, c.fenced)
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v; the driver's error is not reachable", err)
			}
		})
	}
}
