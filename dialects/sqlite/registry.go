package sqlite

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The registry of guarded tables (dialect.Registrar): fencedsql_registry in main.

// RegistryExistsQuery yields 1 when the registry table exists in main.
func (dialectImpl) RegistryExistsQuery() string {
	return "SELECT COUNT(*) FROM main.sqlite_master WHERE type = 'table' AND name = '" + dialect.RegistryTable + "'"
}

// NoRegistry: "no such table" (SQLite has no rights: the existence query decides).
func (dialectImpl) NoRegistry(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such table")
}

// RegistryDDL creates the registry table when missing.
func (dialectImpl) RegistryDDL() []string {
	return []string{"CREATE TABLE IF NOT EXISTS main." + dialect.RegistryTable + " (table_name TEXT PRIMARY KEY, token_column TEXT NOT NULL, version_column TEXT NOT NULL)"}
}

// RegisterQuery records one guarded table.
func (dialectImpl) RegisterQuery(table, tokenCol, versionCol string) (string, []any) {
	return "INSERT INTO main." + dialect.RegistryTable + " (table_name, token_column, version_column) VALUES (?, ?, ?) ON CONFLICT (table_name) DO UPDATE SET token_column = excluded.token_column, version_column = excluded.version_column",
		[]any{table, tokenCol, versionCol}
}

// GuardedTablesQuery lists the tables of main that carry a trigger of the guard or of
// the tombstones (dialect.GuardFinder), each with the text of a guard trigger
// (GuardColumns reads the fencing columns from it; empty without one); a rename moves
// a table's triggers with it.
func (dialectImpl) GuardedTablesQuery() string {
	return "SELECT 'main', tbl_name, COALESCE(max(CASE WHEN name LIKE 'fencedsql\\_guard\\_%' ESCAPE '\\' THEN sql END), '') FROM main.sqlite_master WHERE type = 'trigger' " +
		"AND (name LIKE 'fencedsql\\_guard\\_%' ESCAPE '\\' OR name LIKE 'fencedsql\\_tomb%' ESCAPE '\\') AND tbl_name NOT LIKE 'fencedsql\\_%' ESCAPE '\\' GROUP BY tbl_name ORDER BY 2"
}

// GuardColumns reads the token and version columns from the guard trigger's text
// (dialect.GuardFinder): its NULL tests, WHEN NEW."tok" IS NULL … WHEN NEW."ver" IS NULL.
func (dialectImpl) GuardColumns(text string) (tokenCol, versionCol string, ok bool) {
	return dialect.GuardColumnsInText(text, '"')
}

var (
	_ dialect.Registrar   = dialectImpl{}
	_ dialect.GuardFinder = dialectImpl{}
)
