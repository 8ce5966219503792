package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/sqlxtest"
)

// TestSqlxBindsTheFencedName: importing the dialect alone (this test binary imports no
// sqlx package of the dialect) registers "fenced-pgx" with database/sql and its bind style
// with sqlx, so sqlx.Open("fenced-pgx", dsn) works unchanged.
func TestSqlxBindsTheFencedName(t *testing.T) {
	sqlxtest.CheckBind(t, "fenced-pgx", "UPDATE accounts SET balance = $1 WHERE id = $2")
}
