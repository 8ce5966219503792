package dialect

// DescendantFinder is implemented by dialects in which a table's rows can be written
// under another table's name: PostgreSQL's partitions and inheritance children. A
// write that names the descendant changes the guarded table's rows, and the wrapper,
// which knows a guarded table by the name a statement writes, would send it unfenced.
// So a pool guards every descendant of a guarded table like the table itself, with its
// columns, from its first connection (with the lazy schema checks on; a descendant
// created later is guarded by pools opened later, as a table registered later is).
type DescendantFinder interface {
	// DescendantsQuery returns a query yielding one row (schema, name) per descendant
	// of table, at every level, as the catalog spells them.
	DescendantsQuery(table TableName) (query string, args []any)
}
