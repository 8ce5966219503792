package dialect

// SchemaTokenLister is implemented by a dialect whose guarded tables can live in a
// schema (MySQL/MariaDB: a database) other than the connection's, outside the scope
// that TombstoneLister and FloorFinder list: schema.MaxToken then reads, for a table
// named with such a qualifier, that schema's own floor table (FloorTable) and
// tombstone tables, whose tokens its guards hold to (red-team rt31b F4).
type SchemaTokenLister interface {
	// TombstoneTablesInQuery returns a query listing the tombstone tables of schema,
	// one row each: (schema, table name).
	TombstoneTablesInQuery(schema string) (query string, args []any)
}
