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
