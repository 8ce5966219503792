package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// QueryStart implements dialect.DSNParser as go-sql-driver/mysql reads a DSN,
// [user[:password]@][net[(addr)]]/dbname[?params]: the parameters follow the first '?'
// after the last '/' (a password or address may hold '?' and '/').
func (dialectImpl) QueryStart(dsn string) (q int, keyValue bool) {
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return -1, false
	}
	if i := strings.IndexByte(dsn[slash+1:], '?'); i >= 0 {
		return slash + 1 + i, false
	}
	return -1, false
}

var _ dialect.DSNParser = dialectImpl{}
