// Bad inputs that hide a guarded write from a naive scan: executable comments and U&"…" identifiers.

package fencedsql_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql" // registers "fenced-mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"           // registers "fenced-pgx"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// A multi-statement string whose guarded write the server sees but a naive scan does
// not: inside a MySQL executable comment, or behind a PostgreSQL U&"…" identifier. The
// drivers run such strings (go-sql-driver/mysql with multiStatements=true; pgx runs an
// Exec without arguments over the simple protocol, which accepts several statements),
// so each must be refused, and nothing sent.
func TestBadInputsHiddenGuardedWrite(t *testing.T) {
	cases := []struct {
		d  dialect.Dialect
		in string
	}{
		{mysqldialect.Dialect, `SELECT 1; /*! UPDATE accounts SET balance = 0 */`},
		{mysqldialect.Dialect, `SELECT 1; /*!50000 DELETE FROM accounts */`},
		{mysqldialect.Dialect, `SELECT 1; /*M! INSERT INTO accounts (id) VALUES (1) */`},
		{postgres.Dialect, `SELECT 1; UPDATE U&"\0061ccounts" SET balance = 0`},
		{postgres.Dialect, `SELECT 1; DELETE FROM U&"accounts"`},
	}
	for _, c := range cases {
		t.Run(c.d.Name()+"/"+c.in, func(t *testing.T) {
			dsn := fmt.Sprintf("fencedsql-bad-%d", badMockSeq.Add(1))
			mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
			if err != nil {
				t.Fatal(err)
			}
			defer mdb.Close()
			db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn),
				fencedsql.WithDialect(c.d), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
			defer db.Close()
			_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 9), c.in)
			checkBad(t, badCase{kind: badUnsupported}, err)
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
		})
	}
}
