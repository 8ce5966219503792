package postgres

import (
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
  THEN 1 ELSE 0 END`, []any{table.String()}
}

var _ dialect.ClaimOneChecker = dialectImpl{}

// LocatorQuery yields 1 when table is an ordinary table without inheritance children
// (dialect.LocatorChecker): not partitioned (relkind 'p', which may gain partitions at
// any time) and no child in pg_inherits.
func (dialectImpl) LocatorQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT CASE WHEN c.relkind <> 'p' AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits i WHERE i.inhparent = c.oid) THEN 1 ELSE 0 END FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)`, []any{table.String()}
}

var _ dialect.LocatorChecker = dialectImpl{}
