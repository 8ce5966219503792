package fencedsql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// nopDriver answers every Exec at once: a benchmark over it measures the wrapper only.
type nopDriver struct{}
type nopConn struct{}

func (nopDriver) Open(string) (driver.Conn, error)  { return nopConn{}, nil }
func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("nop: no prepare") }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, errors.New("nop: no tx") }
func (nopConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(1), nil
}

// BenchmarkPassThroughArgs is the wrapper's cost for a statement that writes no guarded
// table, sent with arguments through database/sql, with the real dialects: what the
// driver-lexer check (dialect.SendChecker's pre-filter) adds to every such statement.
func BenchmarkPassThroughArgs(b *testing.B) {
	for _, c := range []struct {
		d dialect.Dialect
		q string
	}{
		{postgres.Dialect, `SELECT id, name FROM customers WHERE id = $1 AND status = 'active' AND name LIKE $2`},
		{mysql.Dialect, `SELECT id, name FROM customers WHERE id = ? AND status = 'active' AND name LIKE ?`},
	} {
		b.Run(c.d.Name(), func(b *testing.B) {
			db := fencedsql.OpenDB(fencedsql.DSNConnector(nopDriver{}, ""), fencedsql.WithDialect(c.d),
				fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
			defer db.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.ExecContext(ctx, c.q, 1, "a%"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
