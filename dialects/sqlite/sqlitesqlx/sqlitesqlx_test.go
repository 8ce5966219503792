package sqlitesqlx_test

import (
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/sqlite/sqlitesqlx"
	"github.com/fencedsql/fencedsql/internal/sqlxtest"
)

func TestRebindForTheFencedDriver(t *testing.T) {
	sqlxtest.CheckBind(t, "fenced-sqlite", "UPDATE accounts SET balance = ? WHERE id = ?")
}
