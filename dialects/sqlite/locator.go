package sqlite

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// LocatorQuery yields 1 when a statement can name table's rows by their rowid's alias
// _rowid_ (dialect.LocatorChecker): every table the name can resolve to is an
// ordinary rowid table (not WITHOUT ROWID, not virtual, not a view) without a column
// called _rowid_, which would hide it; and no table or view is named json_each, which a statement's
// json_each(…) would read instead of the function. An unqualified name is judged in
// every schema that has it: SQLite resolves it in temp first, then main, then the
// attached databases, and a temp table made on one connection shadows main's there
// (red-team rt18s: a temp accounts with a column called rowid made the DELETE, then
// naming rows by rowid, read that column). The wrapper's two-statement DELETE names the rows its fencing UPDATE
// stamped by rowid where the answer is yes, and by the token alone otherwise.
func (dialectImpl) LocatorQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT CASE WHEN EXISTS (SELECT 1 FROM pragma_table_list(?1) WHERE ?2 = '' OR schema = ?2)
AND NOT EXISTS (SELECT 1 FROM pragma_table_list(?1) AS tl WHERE (?2 = '' OR tl.schema = ?2)
	AND (tl.type <> 'table' OR tl.wr <> 0 OR EXISTS (SELECT 1 FROM pragma_table_xinfo(tl.name, tl.schema) AS x WHERE lower(x.name) = '_rowid_')))
AND NOT EXISTS (SELECT 1 FROM pragma_table_list('json_each')) THEN 1 ELSE 0 END`, []any{table.Name, table.Schema}
}

var _ dialect.LocatorChecker = dialectImpl{}
