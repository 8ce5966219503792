package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// lintTombstoneWait reports a table with the tombstone triggers whose INSERT of a key
// does not wait for a concurrent DELETE of that key (docs/design.md G9, "After the
// wait, not before"), appending to found. The tombstone's insert check was written
// for an INSERT that waited on the table's unique index for the DELETE to end, so that
// the check's read sees the DELETE's tombstone. Without the wait — the primary key
// DEFERRABLE (its check queued to the commit), or dropped, or replaced by a DEFERRABLE
// UNIQUE constraint (red-team rt43a F1: through a fenced_allow=ddl pool or by a
// migration; the tombstone triggers, their key compiled in, stayed installed and the
// table passed) — a stale holder's INSERT ran its check before the newer holder's
// DELETE committed, and the deleted key came back under the older token. The
// tombstone function's probe of the tombstone key (v8) waits only once the DELETE's
// tombstone row exists (its AFTER trigger, at the end of the DELETE statement), so
// this lint keeps the prerequisite the design states: a table that fails it is
// refused by the pools (a pool that judged it before the key was dropped keeps its
// verdict until it judges it again: docs/design.md, Known open findings).
//
// The table passes when one of its unique indexes is NOT DEFERRABLE (indimmediate),
// valid, without a predicate or expression, and keyed on columns all of which are
// the tombstone table's key columns (by name: the tombstone table holds the key's
// columns under their own names): every such INSERT then waits for a concurrent
// DELETE of a row with its key. A primary key on other columns is the tombstone-key
// door's (tombstoneKey), not reported here. Otherwise: a DEFERRABLE primary key is
// replaced by the same key NOT DEFERRABLE (PostgreSQL alters the deferrability of
// foreign keys only; a foreign key that references it must be dropped first, and is
// named in the error); a table without a primary key gets one on the tombstone's key
// (which fails, and with it the Fix, while two rows share a key: resolve those
// first). Either is a dialect.SchemaProblem: the lazy check refuses the table with
// fencedsql.ErrSchema, schema.Check reports it.
func (d dialectImpl) lintTombstoneWait(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable, tbl string, found []dialect.SchemaProblem) ([]dialect.SchemaProblem, error) {
	rows, err := query(ctx, tombstoneWaitQuery, regclass(t.Table), tombTable(fold(t.Table)).Name, tombInsertTrigger)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if len(r) != 4 || r[0] == "1" {
			continue
		}
		switch {
		case r[1] != "":
			name := d.QuoteIdent(r[1])
			found = append(found, dialect.SchemaProblem{
				Problem: "primary key " + r[1] + " is DEFERRABLE: an INSERT of a key whose DELETE is in progress does not wait for it, so the tombstone check cannot see the DELETE's tombstone and a stale holder's row comes back; make it NOT DEFERRABLE",
				Fix:     []string{"ALTER TABLE " + tbl + " DROP CONSTRAINT " + name + ", ADD CONSTRAINT " + name + " PRIMARY KEY (" + r[2] + ")"}})
		case r[3] != "":
			found = append(found, dialect.SchemaProblem{
				Problem: "the table has tombstones but no primary key or NOT DEFERRABLE unique key on their key (" + r[3] + "): an INSERT of a key whose DELETE is in progress does not wait for it, so a stale holder's row comes back beside the DELETE; add the primary key (rows sharing a key resolved first)",
				Fix:     []string{"ALTER TABLE " + tbl + " ADD PRIMARY KEY (" + r[3] + ")"}})
		}
	}
	return found, nil
}

// tombstoneWaitQuery yields, for $1 when it carries the tombstone INSERT trigger ($3)
// and its tombstone table ($2, in $1's schema) exists: 1 when a unique index of $1
// makes an INSERT wait for a concurrent DELETE of its key (see lintTombstoneWait),
// else 0; the name of $1's DEFERRABLE primary key and its columns (quoted, in key
// order), "" for none; and, when $1 has no primary key at all, the tombstone table's
// key columns, quoted, in key order ("" otherwise).
const tombstoneWaitQuery = `WITH rel AS (SELECT pg_catalog.to_regclass($1)::pg_catalog.oid AS oid),
tomb AS (
  SELECT c.oid FROM pg_catalog.pg_class c
  WHERE c.relname OPERATOR(pg_catalog.=) $2 AND c.relnamespace OPERATOR(pg_catalog.=) (SELECT r.relnamespace FROM pg_catalog.pg_class r WHERE r.oid OPERATOR(pg_catalog.=) (SELECT oid FROM rel))),
tk AS (
  SELECT a.attname, k.ord
  FROM pg_catalog.pg_index i CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid AND a.attnum OPERATOR(pg_catalog.=) k.attnum
  WHERE i.indrelid OPERATOR(pg_catalog.=) (SELECT oid FROM tomb) AND i.indisprimary AND k.ord OPERATOR(pg_catalog.<=) i.indnkeyatts)
SELECT
  CASE WHEN EXISTS (
    SELECT 1 FROM pg_catalog.pg_index i
    WHERE i.indrelid OPERATOR(pg_catalog.=) (SELECT oid FROM rel) AND i.indisunique AND i.indimmediate AND i.indisvalid
      AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indnkeyatts OPERATOR(pg_catalog.>) 0
      AND NOT EXISTS (
        SELECT 1 FROM pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY u(attnum, ord)
          LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid AND a.attnum OPERATOR(pg_catalog.=) u.attnum
        WHERE u.ord OPERATOR(pg_catalog.<=) i.indnkeyatts AND (a.attname IS NULL OR a.attname NOT IN (SELECT tk.attname FROM tk))))
  THEN 1 ELSE 0 END,
  COALESCE((SELECT k.conname::text FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) (SELECT oid FROM rel) AND k.contype OPERATOR(pg_catalog.=) 'p' AND k.condeferrable), ''),
  COALESCE((SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY u.ord)
    FROM pg_catalog.pg_constraint k CROSS JOIN LATERAL pg_catalog.unnest(k.conkey) WITH ORDINALITY u(attnum, ord)
      JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) k.conrelid AND a.attnum OPERATOR(pg_catalog.=) u.attnum
    WHERE k.conrelid OPERATOR(pg_catalog.=) (SELECT oid FROM rel) AND k.contype OPERATOR(pg_catalog.=) 'p' AND k.condeferrable), ''),
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conrelid OPERATOR(pg_catalog.=) (SELECT oid FROM rel) AND k.contype OPERATOR(pg_catalog.=) 'p') THEN ''
    ELSE COALESCE((SELECT pg_catalog.string_agg(pg_catalog.quote_ident(tk.attname), ', ' ORDER BY tk.ord) FROM tk), '') END
WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgrelid OPERATOR(pg_catalog.=) (SELECT oid FROM rel) AND g.tgname OPERATOR(pg_catalog.=) $3)
  AND EXISTS (SELECT 1 FROM tk)`
