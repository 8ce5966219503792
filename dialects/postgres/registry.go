package postgres

import (
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/jackc/pgx/v5/pgconn"
)

// The registry of guarded tables (dialect.Registrar): fencedsql_registry in the first
// schema of the search_path (normally public), read through the pool's search_path.

// RegistryExistsQuery yields 1 when the registry table is visible, 0 when the database
// has none, and otherwise the schemas that hold one the session's search_path leaves
// out (an application role whose search_path misses the installer's schema).
func (dialectImpl) RegistryExistsQuery() string {
	return "SELECT CASE WHEN to_regclass('" + dialect.RegistryTable + "') IS NOT NULL THEN '1' ELSE COALESCE(" +
		"(SELECT '" + dialect.RegistryElsewhere + "' || pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ') FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace " +
		"WHERE c.relname = '" + dialect.RegistryTable + "' AND c.relkind IN ('r', 'p') AND n.nspname NOT LIKE 'pg\\_temp\\_%'), '0') END"
}

// NoRegistry: undefined_table (42P01); the existence query (to_regclass, which needs no
// right on the table) makes it rare.
func (dialectImpl) NoRegistry(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// RegistryDDL creates the registry table when missing, readable by every role.
func (dialectImpl) RegistryDDL() []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + dialect.RegistryTable + ` (table_name text COLLATE "C" PRIMARY KEY, token_column text NOT NULL, version_column text NOT NULL)`,
		// Every fenced pool reads it; only its owner writes it.
		"REVOKE ALL ON " + dialect.RegistryTable + " FROM PUBLIC",
		"GRANT SELECT ON " + dialect.RegistryTable + " TO PUBLIC",
	}
}

// RegisterQuery records one guarded table.
func (dialectImpl) RegisterQuery(table, tokenCol, versionCol string) (string, []any) {
	return "INSERT INTO " + dialect.RegistryTable + " (table_name, token_column, version_column) VALUES ($1, $2, $3) ON CONFLICT (table_name) DO UPDATE SET token_column = EXCLUDED.token_column, version_column = EXCLUDED.version_column",
		[]any{table, tokenCol, versionCol}
}

var _ dialect.Registrar = dialectImpl{}

// DescendantsQuery lists table's partitions and inheritance children, at every level
// (dialect.DescendantFinder).
func (dialectImpl) DescendantsQuery(table dialect.TableName) (query string, args []any) {
	return `WITH RECURSIVE d(oid) AS (
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent = pg_catalog.to_regclass($1)
  UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid)
SELECT n.nspname::text, c.relname::text FROM d JOIN pg_catalog.pg_class c ON c.oid = d.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace ORDER BY 1, 2`, []any{table.String()}
}

var _ dialect.DescendantFinder = dialectImpl{}
