package mysql

import (
	"database/sql/driver"
	"reflect"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/unwrap"
)

// ResetKeepsSession implements dialect.ResetJudge: go-sql-driver/mysql's connection
// (possibly under wrappers that expose it with a Raw() driver.Conn method) checks, on
// reuse, that the connection is alive and runs no code of the application's, so the
// session check made before the reuse still holds. Any other driver answers false:
// the wrapper reads the session again before the next guarded write (red-team rt44b
// F3).
func (dialectImpl) ResetKeepsSession(raw driver.Conn) bool {
	t := reflect.TypeOf(unwrap.Conn(raw))
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().PkgPath() == goSQLDriverPkg && t.Elem().Name() == "mysqlConn"
}

// goSQLDriverPkg is go-sql-driver/mysql's import path.
const goSQLDriverPkg = "github.com/go-sql-driver/mysql"

var _ dialect.ResetJudge = dialectImpl{}
