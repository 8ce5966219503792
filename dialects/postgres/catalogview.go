package postgres

// catalogViewsQuery lists the relations outside pg_catalog, pg_toast and
// information_schema with a rule (a view's _RETURN rule, or a rule of their own) whose
// query tree reads or writes a relation of those schemas, or another relation so
// listed, at any depth. The relations a rule's query reaches are read from its tree
// (pg_rewrite.ev_action, one ":relid <oid>" per range-table entry), not from pg_depend:
// PostgreSQL records no dependency on a pinned object, so a view over pg_proc or
// pg_trigger depends on nothing there.
//
// The guards' own tables count as catalogs here (red-team rt40a F3; guardRelation):
// a relation whose rule reaches a relation named fencedsql_tomb_…, fencedsql_floor…
// (the floor and its copy) or the SQL lock backend's token sequence
// fencedsql_locks…_token_seq, in any schema, is listed, and so is every foreign table
// one of whose options (postgres_fdw's table_name, another wrapper's table or query)
// names one (a foreign table has no dependency on its remote relation, and its server
// may loop back to this database): the pool refuses writes through them like writes
// to the guard tables themselves (a view over a guard table is also reported by
// otherTriggers, a foreign table by guardForeignTables).
const catalogViewsQuery = `WITH RECURSIVE refs(relid, ref) AS (
    SELECT rw.ev_class, m[1]::oid
    FROM pg_catalog.pg_rewrite rw
    JOIN pg_catalog.pg_class c ON c.oid = rw.ev_class
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace,
    LATERAL regexp_matches(rw.ev_action::text, ':relid ([0-9]+)', 'g') m
    WHERE n.nspname NOT IN ('pg_catalog', 'pg_toast', 'information_schema')
), reach(relid, reached) AS (
    SELECT f.relid, n.nspname::text || '.' || c.relname::text
    FROM refs f
    JOIN pg_catalog.pg_class c ON c.oid = f.ref
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname IN ('pg_catalog', 'pg_toast', 'information_schema') OR c.relname ~* ` + guardRelation + `
  UNION
    SELECT ft.ftrelid, min(o.option_value)
    FROM pg_catalog.pg_foreign_table ft, LATERAL pg_catalog.pg_options_to_table(ft.ftoptions) o
    WHERE o.option_value ~* ` + guardRelation + `
    GROUP BY ft.ftrelid
  UNION
    SELECT f.relid, r.reached
    FROM refs f JOIN reach r ON f.ref = r.relid
    WHERE f.relid <> f.ref
)
SELECT n.nspname, c.relname, min(r.reached)
FROM reach r
JOIN pg_catalog.pg_class c ON c.oid = r.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE NOT (n.nspname IN ('pg_catalog', 'pg_toast', 'information_schema') OR c.relname ~* ` + guardRelation + `)
GROUP BY n.nspname, c.relname
ORDER BY 1, 2`

// guardRelation matches (~*, case-insensitively, anywhere in the text: a foreign
// table's option may be a query) the name of a guard table: a tombstone table, the
// floor or its copy, or the SQL lock backend's token sequence.
const guardRelation = `'fencedsql_(tomb_|floor|locks\w*_token_seq)'`

// CatalogViewsQuery implements dialect.CatalogViewFinder.
func (dialectImpl) CatalogViewsQuery() (string, []any) { return catalogViewsQuery, nil }
