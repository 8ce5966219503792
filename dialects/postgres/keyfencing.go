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
//     whatever its operators;
//   - the partition key (a column or an expression naming it) of the table, of a
//     partitioned descendant, or of an ancestor when the table is a partition (red-team
//     rt61a F1, F2): each partition's unique indexes are keys of its own rows only, and
//     a fenced write moves the row to another partition — beside a stale INSERT of the
//     same key, or out of a partition written alone (the server's raw 23514).
//
// An expression or predicate names a column when its stored node tree holds a Var of
// it (":varattno n "), not when pg_depend records one: PostgreSQL records a dependency
// on the INCLUDE columns too, which are no part of the key (rt61a F3).
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
		if how == "partition" {
			found = append(found, dialect.SchemaProblem{Problem: dialect.KeyFencingColumn(col, partitionKey(dialect.CatalogName(r[3], r[4]).String(), via))})
			continue
		}
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

// partitionKey names, for KeyFencingColumn, the partition key of rel that a fencing
// column is in (through the generated column via, when not "").
func partitionKey(rel, via string) string {
	key := "the partition key of " + rel + " (each partition's unique indexes are its own, and a fenced write moves the row to another partition: across keys for a stale INSERT, out of its bound for a partition written alone)"
	if via != "" {
		key += ", through the generated column " + via
	}
	return key
}

// keyFencingQuery lists, for the fencing columns $2 and $3 of the table $1 (resolved
// like the statements resolve it) and of its pg_inherits descendants, each unique or
// exclusion index that depends on one (see lintKeyFencing): (fencing column, the
// generated column it goes through or "", index name, the indexed relation's schema
// and name, 1 when that relation is $1 itself, 1 for an exclusion constraint's index,
// and how: "key" a key column, "expression" named by an expression or the predicate,
// "row" a whole-row reference); and each partition key of $1, its descendants and its
// ancestors that depends on one (the index name "", how "partition"). The generated columns are found both ways PostgreSQL
// records them (the column's own pg_depend row, or its pg_attrdef entry's), the
// whole-row reference in the stored expression tree (pg_depend records it as a
// dependency on the whole table, which every expression index has).
const keyFencingQuery = `WITH RECURSIVE tree(oid) AS (
    SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
  UNION
    SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent OPERATOR(pg_catalog.=) tree.oid
), up(oid) AS (
    SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
  UNION
    SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN up ON i.inhrelid OPERATOR(pg_catalog.=) up.oid
), rels(oid) AS (
    SELECT oid FROM tree UNION SELECT oid FROM up
), fencing(rel, attnum, col, via) AS (
    SELECT a.attrelid, a.attnum, a.attname::text, ''::text FROM rels tree JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) tree.oid
    WHERE a.attname IN ($2, $3) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
  UNION ALL
    SELECT g.attrelid, g.attnum, a.attname::text, g.attname::text FROM rels tree JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) tree.oid
      JOIN pg_catalog.pg_attribute g ON g.attrelid OPERATOR(pg_catalog.=) tree.oid
    WHERE a.attname IN ($2, $3) AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
      AND g.attgenerated OPERATOR(pg_catalog.<>) '' AND g.attnum OPERATOR(pg_catalog.>) 0 AND NOT g.attisdropped
      AND EXISTS (SELECT FROM pg_catalog.pg_depend d WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
        AND d.refobjid OPERATOR(pg_catalog.=) tree.oid AND d.refobjsubid OPERATOR(pg_catalog.=) a.attnum
        AND (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND d.objid OPERATOR(pg_catalog.=) tree.oid AND d.objsubid OPERATOR(pg_catalog.=) g.attnum
          OR d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass AND d.objid IN (SELECT ad.oid FROM pg_catalog.pg_attrdef ad WHERE ad.adrelid OPERATOR(pg_catalog.=) tree.oid AND ad.adnum OPERATOR(pg_catalog.=) g.attnum)))
)
SELECT DISTINCT f.col, f.via, ic.relname::text, n.nspname::text, c.relname::text, CASE WHEN c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)::pg_catalog.oid THEN 1 ELSE 0 END, CASE WHEN i.indisexclusion THEN 1 ELSE 0 END,
  CASE WHEN f.attnum OPERATOR(pg_catalog.=) ANY ((i.indkey::pg_catalog.int2[])[0:i.indnkeyatts OPERATOR(pg_catalog.-) 1]) THEN 'key' WHEN pg_catalog.strpos(COALESCE(i.indexprs::pg_catalog.text, '') OPERATOR(pg_catalog.||) COALESCE(i.indpred::pg_catalog.text, ''), ':varattno ' OPERATOR(pg_catalog.||) f.attnum OPERATOR(pg_catalog.||) ' ') OPERATOR(pg_catalog.>) 0 THEN 'expression' ELSE 'row' END
FROM fencing f JOIN pg_catalog.pg_index i ON i.indrelid OPERATOR(pg_catalog.=) f.rel AND f.rel IN (SELECT tree.oid FROM tree)
  JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) f.rel
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE (i.indisunique OR i.indisexclusion)
  AND (f.attnum OPERATOR(pg_catalog.=) ANY ((i.indkey::pg_catalog.int2[])[0:i.indnkeyatts OPERATOR(pg_catalog.-) 1])
    OR pg_catalog.strpos(COALESCE(i.indexprs::pg_catalog.text, '') OPERATOR(pg_catalog.||) COALESCE(i.indpred::pg_catalog.text, ''), ':varattno ' OPERATOR(pg_catalog.||) f.attnum OPERATOR(pg_catalog.||) ' ') OPERATOR(pg_catalog.>) 0
    OR pg_catalog.strpos(COALESCE(i.indexprs::pg_catalog.text, '') OPERATOR(pg_catalog.||) COALESCE(i.indpred::pg_catalog.text, ''), ':varattno 0 ') OPERATOR(pg_catalog.>) 0)
  AND NOT EXISTS (SELECT FROM pg_catalog.pg_inherits ih JOIN pg_catalog.pg_index p ON p.indexrelid OPERATOR(pg_catalog.=) ih.inhparent
    WHERE ih.inhrelid OPERATOR(pg_catalog.=) i.indexrelid AND p.indrelid IN (SELECT tree.oid FROM tree))
UNION
SELECT f.col, f.via, ''::text, n.nspname::text, c.relname::text, CASE WHEN c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)::pg_catalog.oid THEN 1 ELSE 0 END, 0, 'partition'
FROM fencing f JOIN pg_catalog.pg_partitioned_table pt ON pt.partrelid OPERATOR(pg_catalog.=) f.rel
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) f.rel
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE f.attnum OPERATOR(pg_catalog.=) ANY (pt.partattrs::pg_catalog.int2[])
  OR pg_catalog.strpos(COALESCE(pt.partexprs::pg_catalog.text, ''), ':varattno ' OPERATOR(pg_catalog.||) f.attnum OPERATOR(pg_catalog.||) ' ') OPERATOR(pg_catalog.>) 0
  OR pg_catalog.strpos(COALESCE(pt.partexprs::pg_catalog.text, ''), ':varattno 0 ') OPERATOR(pg_catalog.>) 0
ORDER BY 4, 5, 3, 1, 2`
