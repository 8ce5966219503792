package dialect

// RegistryTable is the registry of guarded tables, in the database's default schema
// (PostgreSQL: the first schema of the search_path, normally public; MySQL: the
// connection's database; SQLite: main): (table_name, token_column, version_column),
// one row per guarded table, its name as fenced_tables would give it.
const RegistryTable = "fencedsql_registry"

// RegistryElsewhere starts the answer of Registrar.RegistryExistsQuery that names a
// registry the connection cannot see.
const RegistryElsewhere = "elsewhere: "

// Registrar is implemented by dialects that keep the registry of guarded tables.
type Registrar interface {
	// RegistryExistsQuery returns a query yielding the registries to read: one row with
	// 1 when the registry table exists in the connection's default schema, 0 or no row
	// when the database has none; or one row per registry, each its name quoted and
	// qualified (a database may hold several: every one is read); or one row with
	// RegistryElsewhere followed by where one is that the connection cannot see (a
	// schema outside its search_path): the pool then fails with ErrSchema rather than
	// leave the tables it records unguarded.
	RegistryExistsQuery() string
	// RegistryDDL returns the statements that create the registry table when missing.
	RegistryDDL() []string
	// RegisterQuery returns the statement that records (or updates) one guarded table.
	RegisterQuery(table, tokenCol, versionCol string) (query string, args []any)
	// NoRegistry reports whether err, from reading the registry, means that it does not
	// exist (for a database whose catalog shows a table only to who may read it, the
	// existence query answers 1 and the read decides). Any other error fails the pool's
	// first connection: an unreadable registry is not taken for none.
	NoRegistry(err error) bool
}

// NoDatabaseReporter is implemented by dialects whose registry is the connection's
// current database (MySQL/MariaDB). A connection may have none (a DSN that names no
// database, every table written database-qualified): then no registry can be read, and
// the tables one records would go unguarded without a word. NoDatabase reports whether
// err, from reading the registry, says so; the pool then refuses to open with a
// configuration error that asks for the database in the DSN.
type NoDatabaseReporter interface {
	NoDatabase(err error) bool
}

// RegistryRowsQuery reads the registry, one row per guarded table: (table_name,
// token_column, version_column). Every Registrar keeps these columns.
const RegistryRowsQuery = "SELECT table_name, token_column, version_column FROM " + RegistryTable

// RegistryRowsQueryOf reads the registry named (as Registrar.RegistryExistsQuery gives
// it: quoted and qualified by the dialect), with RegistryRowsQuery's columns.
func RegistryRowsQueryOf(name string) string {
	return "SELECT table_name, token_column, version_column FROM " + name
}
