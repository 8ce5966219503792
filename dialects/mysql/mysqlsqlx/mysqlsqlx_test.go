package mysqlsqlx_test

import (
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/mysql/mysqlsqlx"
	"github.com/fencedsql/fencedsql/internal/sqlxtest"
)

func TestRebindForTheFencedDriver(t *testing.T) {
	sqlxtest.CheckBind(t, "fenced-mysql", "UPDATE accounts SET balance = ? WHERE id = ?")
}
