package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardForeignTables finds the foreign tables, in any schema and over any server,
// whose options name one of the guards' own tables of t.Table — its tombstone table
// fencedsql_tomb_<table> or the token floor fencedsql_floor (and its copy
// fencedsql_floor_seq) — red-team rt40a F3. A postgres_fdw foreign table whose server
// loops back to this database (or reaches it by any host name) writes the guard table
// as the user mapping's remote role: DELETE FROM the foreign table through the fenced
// pool erased the tombstones, UPDATE … SET floor = 0 lowered the floor, and a stale
// holder wrote again. A foreign table has no catalog dependency on the remote relation
// (a view over a guard table is found by pg_depend, rt29a F4), and whether a server
// is this database cannot be told from the catalog, so the foreign table is judged by
// its options: any option value (postgres_fdw's table_name; another wrapper's table
// or query option) holding the guard table's name, compared case-insensitively as a
// substring — a name that merely contains it (fencedsql_tomb_acc inside
// fencedsql_tomb_accounts) is reported too, fail closed. A foreign table without a
// table_name option takes its own name, which then carries the reserved prefix and
// the pool refuses writes to it by name. Each is a door of the guard tables
// (dialect.SideDoorGuardTable): schema.Check reports it and the lazy check refuses
// the table's guarded writes while it exists; the pool itself refuses writes through
// it (CatalogViewsQuery lists it). Fix: DROP FOREIGN TABLE. One catalog query.
func (d dialectImpl) guardForeignTables(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	tomb := tombTable(fold(t.Table)).Name
	rows, err := query(ctx, `SELECT n.nspname::pg_catalog.text, c.relname::pg_catalog.text, s.srvname::pg_catalog.text,
  pg_catalog.bool_or(pg_catalog.strpos(pg_catalog.lower(o.option_value), pg_catalog.lower($1)) OPERATOR(pg_catalog.>) 0)::pg_catalog.text
FROM pg_catalog.pg_foreign_table ft
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) ft.ftrelid
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
  JOIN pg_catalog.pg_foreign_server s ON s.oid OPERATOR(pg_catalog.=) ft.ftserver,
  LATERAL pg_catalog.pg_options_to_table(ft.ftoptions) o
WHERE pg_catalog.strpos(pg_catalog.lower(o.option_value), pg_catalog.lower($1)) OPERATOR(pg_catalog.>) 0
  OR pg_catalog.strpos(pg_catalog.lower(o.option_value), $2) OPERATOR(pg_catalog.>) 0
GROUP BY 1, 2, 3
ORDER BY 1, 2`, tomb, dialect.FloorTable)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 4 {
			continue
		}
		ft := dialect.CatalogName(r[0], r[1])
		what := "the token floor " + dialect.FloorTable
		if dialect.CatalogBool(r[3]) {
			what = "the tombstone table " + tomb
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: ft.String(),
			Problem: "the foreign table " + ft.String() + " on server " + r[2] + " names " + what + ", which the guards of " + t.Table.String() +
				" read: if the server reaches this database (a loopback), a write to it through the pool (DELETE, UPDATE … SET floor = 0) deletes tombstones or lowers the floor with the rights of the user mapping's remote role, under a name no check of the guard tables sees, and a stale holder writes again; drop it (the guard tables are the library's own); tombstones or a floor written meanwhile may be low: afterwards raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)",
			Fix: []string{"DROP FOREIGN TABLE IF EXISTS " + ft.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}
