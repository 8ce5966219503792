package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ForgetStatements implements dialect.StatementForgetter (docs/design.md G13,
// red-team rt57a F1, F2). It sends DISCARD PLANS, on which PostgreSQL analyses every
// statement the session cached — its prepared statements, pgx's cached ones among
// them — again at its next use, under the search_path then in force; the statements
// stay, so the application's named ones keep working. When lost, under pgx, it drops
// instead pgx's statement and description caches and prepared statements, and the
// session's (pgx.Conn.DeallocateAll: DEALLOCATE ALL), so that pgx prepares each text
// again rather than send by name one the session dropped; a statement prepared
// through database/sql then runs by its text. pgx clears its caches before it sends
// DEALLOCATE ALL and names its cached statements by their text's digest: were the
// DEALLOCATE to fail, the session would keep statements under names pgx prepares
// again (42P05). So it runs only on an idle connection outside a failed transaction;
// otherwise nothing is done and an error says so (as DISCARD PLANS fails there).
func (dialectImpl) ForgetStatements(ctx context.Context, raw driver.Conn, lost bool) error {
	if c := pgxConnOf(raw); c != nil {
		pg := c.PgConn()
		if pg.IsBusy() {
			return errors.New("the pgx connection is busy")
		}
		if s := pg.TxStatus(); s != 'I' && s != 'T' {
			return fmt.Errorf("the session's transaction status is %q", s)
		}
		if lost {
			return c.DeallocateAll(ctx)
		}
		_, err := pg.Exec(ctx, "DISCARD PLANS").ReadAll()
		return err
	}
	ex, ok := raw.(driver.ExecerContext)
	if !ok {
		return nil // a driver that runs no text without preparing it: nothing to ask
	}
	_, err := ex.ExecContext(ctx, "DISCARD PLANS", nil)
	return err
}

// StatementLost implements dialect.StatementForgetter: 26000 invalid_sql_statement_name
// ("prepared statement … does not exist").
func (dialectImpl) StatementLost(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "26000"
}

var _ dialect.StatementForgetter = dialectImpl{}
