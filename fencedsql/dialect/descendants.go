package dialect

// DescendantFinder is implemented by dialects in which a table's rows can be written
// under another table's name: PostgreSQL's partitions and inheritance children. A
// write that names the descendant changes the guarded table's rows, and the wrapper,
// which knows a guarded table by the name a statement writes, would send it unfenced.
// So a pool guards every descendant of a guarded table like the table itself, with its
// columns, from its first connection (a descendant created later is guarded by pools
// opened later, as a table registered later is).
type DescendantFinder interface {
	// DescendantsQuery returns a query yielding one row (schema, name) per descendant
	// of table, at every level, as the catalog spells them. For an unqualified name —
	// a guard of the table of that name in any schema — the descendants of every table
	// of that name; AncestorsQuery likewise.
	DescendantsQuery(table TableName) (query string, args []any)
}

// AncestorFinder is implemented by dialects in which a write naming another table
// reaches a guarded table's rows: PostgreSQL's inheritance parents and partitioned
// roots, whose UPDATE and DELETE change their descendants' rows (a red-team pass
// wrote a guarded child under a stale token through its unguarded parent). A pool
// guards every ancestor of a guarded table, with the guarded table's columns, from its
// first connection: a write to the ancestor is then fenced over all its rows, or
// refused by the lazy check (ErrSchema) when the ancestor lacks the fencing columns.
type AncestorFinder interface {
	// AncestorsQuery returns a query yielding one row (schema, name) per ancestor of
	// table or of one of its descendants (with multiple inheritance a descendant has
	// other parents, which reach its rows), at every level, as the catalog spells them;
	// table and its descendants are not listed.
	AncestorsQuery(table TableName) (query string, args []any)
}
