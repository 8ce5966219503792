package pgsqlx_test

import (
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/postgres/pgsqlx"
	"github.com/fencedsql/fencedsql/internal/sqlxtest"
)

func TestRebindForTheFencedDriver(t *testing.T) {
	sqlxtest.CheckBind(t, "fenced-pgx", "UPDATE accounts SET balance = $1 WHERE id = $2")
}
