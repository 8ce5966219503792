package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// QueryStart implements dialect.DSNParser as pgx reads a connection string: a URL
// (postgres:// or postgresql://) with its query string after the first '?', anything
// else in keyword/value form.
func (dialectImpl) QueryStart(dsn string) (q int, keyValue bool) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		return strings.IndexByte(dsn, '?'), false
	}
	return -1, true
}

var _ dialect.DSNParser = dialectImpl{}
