package mysql

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

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

// TombstoneTableOf returns table's tombstone table, in table's database
// (dialect.HiddenGuardReader): schema.MaxToken reads it by name, since
// information_schema lists it only to an account with a right on it.
func (dialectImpl) TombstoneTableOf(table dialect.TableName) dialect.TableName {
	return tombTable(table)
}

// Denied reports whether err is a refused privilege (dialect.HiddenGuardReader):
// 1142 (a command on a table), 1143 (on a column), 1044 (on a database). MySQL
// answers 1142 for a table the account may not see whether or not it exists.
func (dialectImpl) Denied(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1142 || me.Number == 1143 || me.Number == 1044)
}

var _ dialect.HiddenGuardReader = dialectImpl{}
