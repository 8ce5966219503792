package mysql_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/internal/sqlxtest"
)

// TestSqlxBindsTheFencedName: importing the dialect alone (this test binary imports no
// sqlx package of the dialect) registers "fenced-mysql" with database/sql and its bind style
// with sqlx, so sqlx.Open("fenced-mysql", dsn) works unchanged.
func TestSqlxBindsTheFencedName(t *testing.T) {
	sqlxtest.CheckBind(t, "fenced-mysql", "UPDATE accounts SET balance = ? WHERE id = ?")
}
