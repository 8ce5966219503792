package sqlite

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// TombstoneTablesInQuery lists the tombstone tables of the attached database schema
// (dialect.SchemaTokenLister): schema.MaxToken reads them, and that database's floor
// table, for a guarded table named with an ATTACH alias (aux.accounts), whose guards
// keep their tombstones and read their floor in its own database file — the main
// database's listings (TombstoneTablesQuery, GuardFloorsQuery) do not cover it
// (red-team rt42c F3). The schema's name is an identifier, quoted: SQLite takes no
// parameter for it.
func (d dialectImpl) TombstoneTablesInQuery(schema string) (query string, args []any) {
	return `SELECT ?, name FROM ` + d.QuoteIdent(schema) + `.sqlite_master WHERE type = 'table' AND name LIKE 'fencedsql\_tomb\_%' ESCAPE '\'`, []any{schema}
}

var _ dialect.SchemaTokenLister = dialectImpl{}
