package postgres

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// lintKeyFencing reports each fencing column (t's token and version column) that a
// unique index or an exclusion constraint depends on (dialect.KeyFencingColumn; red-team
// rt59d F1 for the plain key columns, rt60b F1 for the other forms): every fenced write
// sets the column, so such a write moves the row to another key and a stale holder's
// write finds no row instead of failing. A key is a key however the database enforces
// it, so the forms judged are, on the table and on each of its partitions and
// inheritance descendants (at any depth: a statement on the table writes their rows):
//
//   - a key column of a unique index (the primary key, a unique constraint, a unique
//     index, partial or not; an INCLUDE column is not a key column);
//   - a column an index expression or the index predicate names (pg_depend of the
//     index), or any whole-row reference in them;
//   - the same of a stored generated column whose expression names the fencing
//     column (pg_depend of the column or of its pg_attrdef entry);
//   - the same for the index of an exclusion constraint (pg_index.indisexclusion),
//     whatever its operators.
//
// A partition's index attached to an index of the table (or of a descendant) is
// reported once, as the parent's. One query (keyFencingQuery), run where the lint runs:
// the lazy check once per pool and table, and schema.Check.
func (d dialectImpl) lintKeyFencing(ctx context.Context, query dialect.CatalogQuery, t dialect.LintTable) ([]dialect.SchemaProblem, error) {
	rows, err := query(ctx, keyFencingQuery, regclass(t.Table), t.TokenColumn, t.VersionColumn)
	if err != nil {
		return nil, err
	}
	var found []dialect.SchemaProblem
	seen := map[[4]string]bool{}
	for _, r := range rows {
		if len(r) != 8 {
			continue
		}
		col, via, index, how := r[0], r[1], r[2], r[7]
		id := [4]string{col, r[3], r[4], index}
		if seen[id] {
			continue // the same key through a second path (a generated column too)
		}
		seen[id] = true
		key := index
		if dialect.CatalogBool(r[6]) {
			key += " (an exclusion constraint)"
		}
		switch how {
		case "expression":
			key += ", through an index expression or predicate"
		case "row":
			key += ", through a whole-row reference"
		}
		if via != "" {
			key += ", through the generated column " + via
		}
		if !dialect.CatalogBool(r[5]) {
			key += ", of " + dialect.CatalogName(r[3], r[4]).String() + " (a partition or inheritance descendant of " + t.Table.String() + ")"
		}
		found = append(found, dialect.SchemaProblem{Problem: dialect.KeyFencingColumn(col, key)})
	}
	return found, nil
}

// keyFencingQuery lists, for the fencing columns $2 and $3 of the table $1 (resolved
// like the statements resolve it) and of its pg_inherits descendants, each unique or
// exclusion index that depends on one (see lintKeyFencing): (fencing column, the
// generated column it goes through or "", index name, the indexed relation's schema
// and name, 1 when that relation is $1 itself, 1 for an exclusion constraint's index,
// and how: "key" a key column, "expression" named by an expression or the predicate,
// "row" a whole-row reference). The generated columns are found both ways PostgreSQL
// records them (the column's own pg_depend row, or its pg_attrdef entry's), the
// whole-row reference in the stored expression tree (pg_depend records it as a
// dependency on the whole table, which every expression index has).
const keyFencingQuery = `WITH RECURSIVE tree(oid) AS (
    SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
  UNION
    SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent OPERATOR(pg_catalog.=) tree.oid
), fencing(rel, attnum, col, via) AS (
    SELECT a.attrelid, a.attnum, a.attname::text, ''::text FROM tree JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) tree.oid
    WHERE a.attname IN ($2, $3) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
  UNION ALL
    SELECT g.attrelid, g.attnum, a.attname::text, g.attname::text FROM tree JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) tree.oid
      JOIN pg_catalog.pg_attribute g ON g.attrelid OPERATOR(pg_catalog.=) tree.oid
    WHERE a.attname IN ($2, $3) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
      AND g.attgenerated OPERATOR(pg_catalog.<>) '' AND g.attnum OPERATOR(pg_catalog.>) 0 AND NOT g.attisdropped
      AND EXISTS (SELECT FROM pg_catalog.pg_depend d WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
        AND d.refobjid OPERATOR(pg_catalog.=) tree.oid AND d.refobjsubid OPERATOR(pg_catalog.=) a.attnum
        AND (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) tree.oid AND d.objsubid OPERATOR(pg_catalog.=) g.attnum
          OR d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid IN (SELECT ad.oid FROM pg_catalog.pg_attrdef ad WHERE ad.adrelid OPERATOR(pg_catalog.=) tree.oid AND ad.adnum OPERATOR(pg_catalog.=) g.attnum)))
)
SELECT DISTINCT f.col, f.via, ic.relname::text, n.nspname::text, c.relname::text, CASE WHEN c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)::pg_catalog.oid THEN 1 ELSE 0 END, CASE WHEN i.indisexclusion THEN 1 ELSE 0 END,
  CASE WHEN f.attnum OPERATOR(pg_catalog.=) ANY ((i.indkey::pg_catalog.int2[])[0:i.indnkeyatts OPERATOR(pg_catalog.-) 1]) THEN 'key' WHEN EXISTS (SELECT FROM pg_catalog.pg_depend d WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) i.indexrelid
      AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid OPERATOR(pg_catalog.=) f.rel AND d.refobjsubid OPERATOR(pg_catalog.=) f.attnum) THEN 'expression' ELSE 'row' END
FROM fencing f JOIN pg_catalog.pg_index i ON i.indrelid OPERATOR(pg_catalog.=) f.rel
  JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) f.rel
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE (i.indisunique OR i.indisexclusion)
  AND (f.attnum OPERATOR(pg_catalog.=) ANY ((i.indkey::pg_catalog.int2[])[0:i.indnkeyatts OPERATOR(pg_catalog.-) 1])
    OR (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL) AND (EXISTS (SELECT FROM pg_catalog.pg_depend d WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) i.indexrelid
        AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.refobjid OPERATOR(pg_catalog.=) f.rel AND d.refobjsubid OPERATOR(pg_catalog.=) f.attnum)
      OR pg_catalog.strpos(COALESCE(i.indexprs::pg_catalog.text, '') OPERATOR(pg_catalog.||) COALESCE(i.indpred::pg_catalog.text, ''), ':varattno 0 ') OPERATOR(pg_catalog.>) 0))
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits ih JOIN pg_catalog.pg_index p ON p.indexrelid OPERATOR(pg_catalog.=) ih.inhparent
    WHERE ih.inhrelid OPERATOR(pg_catalog.=) i.indexrelid AND p.indrelid IN (SELECT tree.oid FROM tree))
ORDER BY 4, 5, 3, 1, 2`
