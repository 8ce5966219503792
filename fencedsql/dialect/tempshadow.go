package dialect

import "context"

// TempShadowFinder is implemented by a dialect whose catalog queries (the lazy schema
// check's) do not see a temporary table that shadows a base table of the same name for
// its session — MySQL/MariaDB, whose information_schema lists no temporary tables
// (MariaDB before 11.2). TempShadow reports whether, on the connection q runs on, t
// resolves to a temporary table; a name that resolves to nothing is not one. The
// wrapper asks it only on a connection whose name resolution may have moved (after
// Raw, USE, or DDL naming a guarded table), never on the per-statement path.
type TempShadowFinder interface {
	TempShadow(ctx context.Context, q CatalogQuery, t TableName) (bool, error)
}

// TempTableFinder is implemented by a dialect whose catalog queries resolve a name as
// the session does, a temporary table of the session first — PostgreSQL (pg_temp is
// searched first), SQLite (the temp schema before main). TempTable reports whether,
// on the connection q runs on, t resolves to a temporary table; a name that resolves
// to nothing is not one. schema.Check asks it before judging a table (red-team rt46c
// F5: a TEMP table named like the guarded table in the checking session was judged,
// and the Fix installed the guard on it, not on the permanent table); the wrapper
// does not (its lazy check judges the relation the session resolves, temporary or not).
type TempTableFinder interface {
	TempTable(ctx context.Context, q CatalogQuery, t TableName) (bool, error)
}
