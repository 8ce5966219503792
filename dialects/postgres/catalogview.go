package postgres

// catalogViewsQuery lists the relations outside pg_catalog, pg_toast and
// information_schema with a rule (a view's _RETURN rule, or a rule of their own) whose
// query tree reads or writes a relation of those schemas, or another relation so
// listed, at any depth. The relations a rule's query reaches are read from its tree
// (pg_rewrite.ev_action, one ":relid <oid>" per range-table entry), not from pg_depend:
// PostgreSQL records no dependency on a pinned object, so a view over pg_proc or
// pg_trigger depends on nothing there.
const catalogViewsQuery = `WITH RECURSIVE refs(relid, ref) AS (
    SELECT rw.ev_class, m[1]::oid
    FROM pg_catalog.pg_rewrite rw
    JOIN pg_catalog.pg_class c ON c.oid = rw.ev_class
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace,
    LATERAL regexp_matches(rw.ev_action::text, ':relid ([0-9]+)', 'g') m
    WHERE n.nspname NOT IN ('pg_catalog', 'pg_toast', 'information_schema')
), reach(relid, reached) AS (
    SELECT f.relid, f.ref
    FROM refs f
    JOIN pg_catalog.pg_class c ON c.oid = f.ref
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname IN ('pg_catalog', 'pg_toast', 'information_schema')
  UNION
    SELECT f.relid, r.reached
    FROM refs f JOIN reach r ON f.ref = r.relid
    WHERE f.relid <> f.ref
)
SELECT n.nspname, c.relname, min(rn.nspname || '.' || rc.relname)
FROM reach r
JOIN pg_catalog.pg_class c ON c.oid = r.relid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_class rc ON rc.oid = r.reached
JOIN pg_catalog.pg_namespace rn ON rn.oid = rc.relnamespace
GROUP BY n.nspname, c.relname
ORDER BY 1, 2`

// CatalogViewsQuery implements dialect.CatalogViewFinder.
func (dialectImpl) CatalogViewsQuery() (string, []any) { return catalogViewsQuery, nil }
