package sqlite

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// QueryStart implements dialect.DSNParser as modernc.org/sqlite reads a DSN: a file
// name or file: URI whose parameters follow the first '?' (not in the first position).
// A file name may hold '=' (/srv/env=prod/app.db): it is never keyword/value text.
func (dialectImpl) QueryStart(dsn string) (q int, keyValue bool) {
	if q = strings.IndexByte(dsn, '?'); q >= 1 {
		return q, false
	}
	return -1, false
}

var _ dialect.DSNParser = dialectImpl{}
