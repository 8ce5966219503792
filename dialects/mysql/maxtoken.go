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
	return `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_NAME LIKE 'fencedsql\_tomb\_%'`,
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

// PastReadQuery reads the session's system_versioning_asof (dialect.PastReader): on
// MariaDB from 10.3.4 (in a /*M!100304 … */ comment, which MySQL and older MariaDB skip:
// there is no such variable, and the query answers ""), DEFAULT unless set. Set, every
// SELECT of a system-versioned table that names no FOR SYSTEM_TIME reads it as of that
// time, and schema.MaxToken would answer the highest token of then (red-team rt50b F4).
func (dialectImpl) PastReadQuery() string {
	return "SELECT CAST(CONVERT(CONCAT('' /*M!100304 , @@SESSION.system_versioning_asof */) USING ascii) AS BINARY)"
}

// PastRead judges PastReadQuery's value (dialect.PastReader): a system_versioning_asof
// other than DEFAULT (asofDefault, the session check's test) reads the past.
func (dialectImpl) PastRead(value string) string {
	if value == "" || asofDefault(value) {
		return ""
	}
	return "system_versioning_asof = '" + value + "'"
}

var _ dialect.PastReader = dialectImpl{}
