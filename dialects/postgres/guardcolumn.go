package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardColumn finds a guard whose DELETE trigger reads another column than the
// table's token column (dialect.SideDoorGuardColumn). The trigger's WHEN clause
// (guardDeleteWhen) names the token column, and PostgreSQL binds it to the column's
// number, not its name; the guard function reads NEW.<token> by name. A migration
// that renames the token column away and adds another of its name (ALTER TABLE …
// RENAME COLUMN fence_token TO fence_token_old, ADD COLUMN fence_token bigint NOT NULL
// DEFAULT 0, or renames another column into the name) replaces every row's token by
// the new column's default without the row triggers: the guard function judges the
// new column, the table looks fit (a bigint NOT NULL column of the configured name),
// and a stale holder overwrites rows a newer one wrote (red-team rt42a F1; the pool
// refuses such DDL whatever WithDDL says, plan/guardcolumn.go, but a plain
// connection may run it). The DELETE trigger still depends (pg_depend) on the old
// column: that is the evidence. One catalog query. A partition's trigger is a clone
// of its root's (tgparentid), for which PostgreSQL records no column dependency (its
// WHEN clause is the root's): the trigger judged is the one it was cloned from, up to
// the root (red-team rt44a F5: every fenced write naming a partition was refused as
// this door). A partition's columns are its root's: none can be renamed, dropped or
// added on the partition alone. No Fix: the tokens the rows
// carried are in the old column, if it was kept; restore them (UPDATE … SET
// <token> = <old column>) before re-installing the guard (fencedsql-schema -apply).
func (d dialectImpl) guardColumn(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE up(oid, tgrelid, tgparentid, tgfoid) AS (
  SELECT t.oid, t.tgrelid, t.tgparentid, t.tgfoid FROM pg_catalog.pg_trigger t WHERE t.tgrelid = pg_catalog.to_regclass($1) AND t.tgname = $2
  UNION ALL SELECT c.oid, c.tgrelid, c.tgparentid, c.tgfoid FROM pg_catalog.pg_trigger c JOIN up ON c.oid = up.tgparentid)
SELECT COALESCE((SELECT pg_catalog.string_agg(a.attname::text, ', ' ORDER BY a.attnum)
    FROM pg_catalog.pg_depend dp JOIN pg_catalog.pg_attribute a ON a.attrelid = dp.refobjid AND a.attnum = dp.refobjsubid
    WHERE dp.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass AND dp.objid = t.oid
      AND dp.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dp.refobjid = t.tgrelid AND dp.refobjsubid > 0), '')
FROM up t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
WHERE t.tgparentid = 0 AND p.proname::text LIKE 'fencedsql\_guard\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend dp JOIN pg_catalog.pg_attribute a ON a.attrelid = dp.refobjid AND a.attnum = dp.refobjsubid
    WHERE dp.classid = 'pg_catalog.pg_trigger'::pg_catalog.regclass AND dp.objid = t.oid
      AND dp.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dp.refobjid = t.tgrelid AND a.attname = $3)`,
		regclass(t.Table), guardDeleteTrigger, t.TokenColumn)
	if err != nil || len(rows) == 0 || len(rows[0]) < 1 {
		return nil, err
	}
	reads := rows[0][0]
	if reads == "" {
		reads = "no column"
	}
	return []dialect.SideDoor{{Kind: dialect.SideDoorGuardColumn, Object: "trigger " + guardDeleteTrigger + " on " + t.Table.String(),
		Problem: "the guard's DELETE trigger reads the column " + reads + ", not the token column " + t.TokenColumn +
			": the token column was replaced (renamed or dropped, and a column of its name added or renamed into place) without the row triggers, so every row's token is the new column's value " +
			"(its default, 0) and a stale holder may overwrite rows a newer holder wrote; restore the tokens from the old column (UPDATE … SET " + d.QuoteIdent(t.TokenColumn) +
			" = <old column>) if it was kept, then re-run fencedsql-schema -apply (the guard's DDL re-creates the trigger)"}}, nil
}
