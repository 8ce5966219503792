package sqlite

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// LocatorQuery yields 1 when a statement can name table's rows by rowid
// (dialect.LocatorChecker): an ordinary rowid table (not WITHOUT ROWID, not virtual)
// without a column called rowid, which would hide it. The wrapper's two-statement
// DELETE names the rows its fencing UPDATE stamped by rowid there, and by the token
// alone elsewhere.
func (dialectImpl) LocatorQuery(table dialect.TableName) (query string, args []any) {
	schema := table.Schema
	if schema == "" {
		schema = "main"
	}
	return `SELECT CASE WHEN EXISTS (SELECT 1 FROM pragma_table_list(?1) WHERE schema = ?2 AND type = 'table' AND wr = 0)
AND NOT EXISTS (SELECT 1 FROM pragma_table_xinfo(?1, ?2) WHERE lower(name) = 'rowid') THEN 1 ELSE 0 END`, []any{table.Name, schema}
}

var _ dialect.LocatorChecker = dialectImpl{}
