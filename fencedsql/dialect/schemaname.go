package dialect

// SchemaNameFolder is implemented by dialects whose server compares schema (database)
// names ignoring case whatever its configuration: SQLite, where MAIN.accounts is
// main's accounts (ASCII letters only). FoldSchemaName returns the form two names
// share when the server takes them for one. Dialects without it compare schema names
// exactly: PostgreSQL always; MySQL/MariaDB as with lower_case_table_names = 0, so
// under 1 or 2 a qualifier spelt in another case than the database's name is taken
// for another database (the floor tools then name its tables: fail closed).
type SchemaNameFolder interface {
	FoldSchemaName(name string) string
}

// SchemaKey returns name as d's server compares schema names (SchemaNameFolder), for
// use as a map key; d may be any value that implements the dialect's interfaces.
func SchemaKey(d any, name string) string {
	if f, ok := d.(SchemaNameFolder); ok {
		return f.FoldSchemaName(name)
	}
	return name
}
