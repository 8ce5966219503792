package mysql

import (
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/go-sql-driver/mysql"
)

// The registry of guarded tables (dialect.Registrar): fencedsql_registry in the
// connection's database.

// RegistryExistsQuery answers 1: information_schema shows a table only to an account
// with a right on it, so the read itself decides (NoRegistry).
func (dialectImpl) RegistryExistsQuery() string { return "SELECT 1" }

// NoRegistry: error 1146, no such table.
func (dialectImpl) NoRegistry(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1146
}

// NoDatabase: error 1046, no database selected (dialect.NoDatabaseReporter): the DSN
// names no database, so the connection has no registry to read.
func (dialectImpl) NoDatabase(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1046
}

// RegistryDDL creates the registry table when missing.
func (dialectImpl) RegistryDDL() []string {
	return []string{"CREATE TABLE IF NOT EXISTS " + dialect.RegistryTable + " (table_name VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY, token_column VARCHAR(64) NOT NULL, version_column VARCHAR(64) NOT NULL) ENGINE=InnoDB"}
}

// RegisterQuery records one guarded table.
func (dialectImpl) RegisterQuery(table, tokenCol, versionCol string) (string, []any) {
	return "INSERT INTO " + dialect.RegistryTable + " (table_name, token_column, version_column) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE token_column = VALUES(token_column), version_column = VALUES(version_column)",
		[]any{table, tokenCol, versionCol}
}

// GuardedTablesQuery lists the tables of the connection's database that carry a trigger
// of the guard or of the tombstones (dialect.GuardFinder), each with the body of its
// guard trigger (GuardColumns reads the fencing columns from it; empty without one).
// information_schema shows a trigger only to an account with the TRIGGER privilege on
// its table: a least-privilege application sees none, and the registry is the record.
// Other databases are not searched: a guarded table written database-qualified from a
// pool of another database is guarded only when listed or registered where the pool
// reads.
func (dialectImpl) GuardedTablesQuery() string {
	return "SELECT MIN(EVENT_OBJECT_SCHEMA), MIN(EVENT_OBJECT_TABLE), COALESCE(MAX(CASE WHEN TRIGGER_NAME LIKE 'fencedsql\\_guard\\_%' THEN ACTION_STATEMENT END), '') " +
		"FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND " + exactDatabase("TRIGGER_SCHEMA", "") + " " +
		"AND (TRIGGER_NAME LIKE 'fencedsql\\_guard\\_%' OR TRIGGER_NAME LIKE 'fencedsql\\_tomb%') AND EVENT_OBJECT_TABLE NOT LIKE 'fencedsql\\_%' " +
		"GROUP BY CAST(EVENT_OBJECT_SCHEMA AS BINARY), CAST(EVENT_OBJECT_TABLE AS BINARY) ORDER BY 1, 2"
}

// GuardColumns reads the token and version columns from the guard trigger's body
// (dialect.GuardFinder): its NULL tests, IF NEW.`tok` IS NULL OR NEW.`ver` IS NULL.
func (dialectImpl) GuardColumns(text string) (tokenCol, versionCol string, ok bool) {
	return dialect.GuardColumnsInText(text, '`')
}

var (
	_ dialect.Registrar          = dialectImpl{}
	_ dialect.GuardFinder        = dialectImpl{}
	_ dialect.NoDatabaseReporter = dialectImpl{}
)
