package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestSqlmockSendCheck: the drivers' own lexers check (dialect.SendChecker) sends
// nothing: over go-sqlmock an ordinary guarded write sends exactly its fenced statement,
// and a text the driver would read otherwise than the server is refused with
// ErrUnsupported before anything reaches the mock.
func TestSqlmockSendCheck(t *testing.T) {
	for _, c := range []struct {
		d               dialect.Dialect
		write, fenced   string
		desync          string
		passWithDollars string
	}{
		{
			d:               postgres.Dialect,
			write:           `UPDATE accounts SET balance = balance - $1 WHERE id = $2`,
			fenced:          `UPDATE accounts SET balance = balance - $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`,
			desync:          `UPDATE accounts SET balance = length(name'\' || ' $1 ' || E'\'') + 0 * length($1::text) WHERE id = $2`,
			passWithDollars: `SELECT $tag$ $$ $tag$, $1`,
		},
		{
			d:               mysql.Dialect,
			write:           `UPDATE accounts SET balance = balance - ? WHERE id = ?`,
			fenced:          "UPDATE accounts SET balance = balance - ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
			desync:          "UPDATE accounts SET balance = length(CONCAT(--\v '\n'x ? ', ? /*'*/)) WHERE id = ?",
			passWithDollars: "SELECT 'a$b', ?",
		},
	} {
		t.Run(c.d.Name(), func(t *testing.T) {
			dsn := "sendcheck-" + c.d.Name()
			mockDB, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
			if err != nil {
				t.Fatal(err)
			}
			defer mockDB.Close()
			db := fencedsql.OpenDB(fencedsql.DSNConnector(mockDB.Driver(), dsn), fencedsql.WithDialect(c.d),
				fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
			defer db.Close()
			ctx := fencedsql.WithToken(context.Background(), 7)
			if c.d == postgres.Dialect {
				mock.ExpectExec(c.fenced).WithArgs(int64(30), int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
			} else {
				mock.ExpectExec(c.fenced).WithArgs(int64(30), int64(7), int64(7), int64(1)).WillReturnResult(sqlmock.NewResult(0, 1))
			}
			if _, err := db.ExecContext(ctx, c.write, 30, 1); err != nil {
				t.Fatalf("ordinary write: %v", err)
			}
			if _, err := db.ExecContext(ctx, c.desync, ") --", 1); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("desync text: err = %v, want ErrUnsupported", err)
			}
			mock.ExpectQuery(c.passWithDollars).WithArgs(int64(1)).WillReturnRows(sqlmock.NewRows([]string{"a", "b"}).AddRow("x", 1))
			rows, err := db.QueryContext(ctx, c.passWithDollars, 1)
			if err != nil {
				t.Fatalf("pass-through: %v", err)
			}
			rows.Close()
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
