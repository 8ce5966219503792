package dialect

// CatalogViewFinder is implemented by dialects in which a write naming an ordinary
// relation can change a system catalog or settings relation: a view over one
// (PostgreSQL's views over pg_proc, pg_trigger, pg_attribute or pg_settings, whose
// rule calls set_config; MySQL/MariaDB's views over mysql.proc), a view over such a
// view, or a relation with a rule that writes one (PostgreSQL). The wrapper refuses
// writes to the catalogs by name, on a pool with guarded tables, because they hold
// the guards' functions and triggers, the fencing columns' NOT NULL and the session's
// settings; a write through such a relation would change them without naming them
// (red-team rt37e F2, F3). The guards' own tables (tombstone tables, the token
// floor) count as catalogs here: a view over one, and on PostgreSQL a foreign table
// whose options name one, erased tombstones or lowered the floor through the pool
// (red-team rt40a F2, F3). So a pool reads these relations at its first connection
// and refuses writes to them like writes to the catalogs (a relation created later is
// refused by pools opened later; the wrapper refuses creating one through the pool).
type CatalogViewFinder interface {
	// CatalogViewsQuery returns a query yielding one row (schema, name, reaches) per
	// relation outside the system catalogs through which a write may reach a system
	// catalog or settings relation, directly or through other such relations, in every
	// schema (database) the connection can see: schema and name as the catalog spells
	// them, reaches the catalog relation reached, as "schema.name" (MySQL/MariaDB:
	// "database.*"; "" when the dialect cannot tell: a view whose definition the
	// account may not read is listed, fail closed, when it is updatable; a guard table
	// reached is named with its fencedsql_ prefix, which the refusal's message names).
	CatalogViewsQuery() (query string, args []any)
}
