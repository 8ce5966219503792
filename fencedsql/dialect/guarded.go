package dialect

// GuardFinder is implemented by dialects that can list the tables carrying the guard's
// triggers: the database's own record of what is guarded, which a rename of the table,
// a registry the pool does not read or a typo in fenced_tables does not change. A fenced
// pool guards every table it lists (schema.Guarded).
type GuardFinder interface {
	// GuardedTablesQuery returns a query yielding one row (schema, table) per table of
	// the database that carries a trigger of the guard or of the tombstones (the
	// partitions of such a table included), fencedsql's own tables excluded.
	GuardedTablesQuery() string
}
