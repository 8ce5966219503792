package postgres_test

import (
	"context"
	"database/sql/driver"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// hidingDriver stands for an instrumentation wrapper (sqlhooks, sqlmw style) below the
// fenced driver that forwards the statement interfaces but neither Raw() nor the pgx
// connection: the wrapper cannot read the session from pgx's state.
type hidingDriver struct{ d driver.Driver }

func (h hidingDriver) Open(name string) (driver.Conn, error) {
	c, err := h.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &hidingConn{c}, nil
}

type hidingConn struct{ c driver.Conn }

func (h *hidingConn) Prepare(q string) (driver.Stmt, error) { return h.c.Prepare(q) }
func (h *hidingConn) Close() error                          { return h.c.Close() }
func (h *hidingConn) Begin() (driver.Tx, error)             { return h.c.Begin() } //nolint:staticcheck // the interface's own
func (h *hidingConn) ExecContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Result, error) {
	return h.c.(driver.ExecerContext).ExecContext(ctx, q, a)
}
func (h *hidingConn) QueryContext(ctx context.Context, q string, a []driver.NamedValue) (driver.Rows, error) {
	return h.c.(driver.QueryerContext).QueryContext(ctx, q, a)
}
func (h *hidingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	return h.c.(driver.ConnBeginTx).BeginTx(ctx, o)
}

func init() {
	fencedsql.Register("fenced-pgx-hidden", hidingDriver{stdlib.GetDefaultDriver()}, fencedsql.WithDialect(postgres.Dialect))
}

// Under a driver wrapper that hides pgx's connection, the session is not tracked: a
// setting changed by a statement the planner does not take for a SET (set_config in a
// SELECT) is found by the session query, which runs before every text whose reading
// depends on it.
func TestSessionReadingHiddenConn(t *testing.T) {
	be := fencetest.Postgres()
	be.DriverName = "fenced-pgx-hidden"
	hidden := `WITH a AS (SELECT '\'), x AS (SELECT '), d AS (DELETE FROM accounts WHERE id = 3 RETURNING 1) SELECT 1 --') SELECT 1`
	fencetest.RunSessionReading(t, be, []fencetest.ReadingStep{
		{SQL: `SELECT balance FROM accounts WHERE id = 1 AND 'x' <> '\'`},
		{SQL: "SELECT set_config('standard_conforming_strings', 'off', false)"},
		{SQL: hidden, Refused: "standard_conforming_strings"},
		{SQL: "SELECT set_config('standard_conforming_strings', 'on', false)"},
		{SQL: hidden},
	})
}
