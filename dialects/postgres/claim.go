package postgres

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ClaimOneQuery yields 1 when no rule rewrites an UPDATE of table and no AFTER UPDATE
// trigger (row or statement level, enabled or not) other than the guards' own
// (fencedsql_…) is on it; foreign-key triggers (internal) are not counted: the claim
// changes no key.
func (dialectImpl) ClaimOneQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT CASE WHEN pg_catalog.to_regclass($1) IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite w WHERE w.ev_class = pg_catalog.to_regclass($1) AND w.ev_type = '2')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t WHERE t.tgrelid = pg_catalog.to_regclass($1) AND NOT t.tgisinternal
    AND (t.tgtype::integer & 16) <> 0 AND (t.tgtype::integer & 66) = 0 AND pg_catalog.left(t.tgname, 10) <> 'fencedsql_')
  THEN 1 ELSE 0 END`, []any{regclass(table)}
}

var _ dialect.ClaimOneChecker = dialectImpl{}

// LocatorQuery yields 1 when table is an ordinary table without inheritance children
// (dialect.LocatorChecker): not partitioned (relkind 'p', which may gain partitions at
// any time) and no child in pg_inherits; and when the session may read its ctid,
// which needs SELECT on the whole table (a role granted SELECT on some columns only
// gets "permission denied" for a statement naming ctid); and when no rule rewrites an
// UPDATE of it: the statements that record the stamped rows' ctids run their UPDATE
// in a WITH query, which PostgreSQL refuses on a table with such a rule (0A000).
func (dialectImpl) LocatorQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT CASE WHEN c.relkind <> 'p' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhparent = c.oid) AND pg_catalog.has_table_privilege(c.oid, 'SELECT')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite w WHERE w.ev_class = c.oid AND w.ev_type = '2') THEN 1 ELSE 0 END
FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)`, []any{regclass(table)}
}

var _ dialect.LocatorChecker = dialectImpl{}

// ViewLockQuery yields 1 when rel resolves (to_regclass, on the connection's
// search_path) to a view whose rewrite rule depends, directly or through other
// relations' rules (views of views), on a relation named like one of guarded
// (dialect.ViewLockChecker): pg_depend records every relation a view's query reads.
func (dialectImpl) ViewLockQuery(rel dialect.Relation, guarded []dialect.TableName) (query string, args []any) {
	if len(guarded) == 0 {
		return `SELECT 0`, nil
	}
	args = []any{rel.Text}
	var in strings.Builder
	for i, g := range guarded {
		if i > 0 {
			in.WriteString(", ")
		}
		args = append(args, strings.ToLower(g.Name))
		in.WriteString("$" + strconv.Itoa(len(args)))
	}
	return `WITH RECURSIVE r(oid, depth) AS (
  SELECT c.oid, 0 FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1) AND c.relkind = 'v'
  UNION
  SELECT d.refobjid, r.depth + 1 FROM r
    JOIN pg_catalog.pg_rewrite w ON w.ev_class = r.oid
    JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid = w.oid
      AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid <> r.oid
  WHERE r.depth < 32
)
SELECT CASE WHEN EXISTS (SELECT 1 FROM r JOIN pg_catalog.pg_class c ON c.oid = r.oid
  WHERE r.depth > 0 AND pg_catalog.lower(c.relname::text) IN (` + in.String() + `)) THEN 1 ELSE 0 END`, args
}

var _ dialect.ViewLockChecker = dialectImpl{}
