package mysql

import "github.com/fencedsql/fencedsql/fencedsql/dialect"

// TombstoneTablesInQuery lists the tombstone tables of database schema
// (dialect.SchemaTokenLister): schema.MaxToken reads them, and that database's floor,
// for a guarded table named database-qualified through a connection to another
// database, whose guards keep their tombstones and read their floor in their own
// database.
func (dialectImpl) TombstoneTablesInQuery(schema string) (query string, args []any) {
	return `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' AND TABLE_NAME LIKE 'fencedsql\_tomb\_%'`,
		[]any{schema}
}

var _ dialect.SchemaTokenLister = dialectImpl{}
