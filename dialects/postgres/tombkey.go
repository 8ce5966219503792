package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tombstoneKey finds a tombstone table whose key is no longer the table's primary key
// (dialect.SideDoorTombstoneKey). TombstoneDDL creates the tombstone table only if it
// is missing, and UntombstoneDDL keeps it, so after the documented re-install around a
// key change (drop the tombstone triggers, ALTER the key column, re-run the Fix) the
// old tombstone table stays: a key made numeric from bigint is recorded rounded (1.5
// as 2) and a stale INSERT of 1.5 finds no tombstone; one made citext from text makes
// every INSERT fail with an untyped "operator does not exist" (red-team rt20g F5). One
// query: each primary-key column of the table beside the tombstone table's column of
// that name (type with modifier, collation) and its place in the tombstone's key.
// Fix: ALTER each differing tombstone column to the key's type and collation
// (existing tombstones converted as the table's keys were); when the key's columns
// themselves differ, no statement: drop the tombstone table and re-run
// fencedsql-schema -apply.
func (d dialectImpl) tombstoneKey(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	// The tombstone table sits in the table's own schema, the one the table's name
	// resolves to (an unqualified name on a pool whose search_path starts elsewhere
	// is not public's: red-team rt21a F10).
	tombName := tombTable(fold(t.Table)).Name
	rows, err := query(ctx, `WITH tomb AS (
  SELECT c.oid, n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relname = $2 AND c.relnamespace = (SELECT r.relnamespace FROM pg_catalog.pg_class r WHERE r.oid = pg_catalog.to_regclass($1))),
k AS (
  SELECT a.attname, a.atttypid, a.atttypmod, a.attcollation, k.ord
  FROM pg_catalog.pg_index i CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
  WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indisprimary AND k.ord <= i.indnkeyatts),
tk AS (
  SELECT a.attname, k.ord
  FROM pg_catalog.pg_index i CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
  WHERE i.indrelid = (SELECT oid FROM tomb) AND i.indisprimary AND k.ord <= i.indnkeyatts)
SELECT k.attname::text, pg_catalog.format_type(k.atttypid, k.atttypmod), COALESCE(pg_catalog.format_type(ta.atttypid, ta.atttypmod), ''),
  CASE WHEN ta.attname IS NOT NULL AND ta.atttypid = k.atttypid AND ta.atttypmod = k.atttypmod AND ta.attcollation = k.attcollation THEN 1 ELSE 0 END,
  CASE WHEN tk.ord = k.ord THEN 1 ELSE 0 END,
  (SELECT pg_catalog.count(*) FROM tk),
  CASE WHEN k.attcollation = 0 OR k.attcollation = ty.typcollation THEN '' ELSE
    (SELECT pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname) FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = k.attcollation) END,
  (SELECT nspname::text FROM tomb)
FROM k JOIN pg_catalog.pg_type ty ON ty.oid = k.atttypid
  LEFT JOIN pg_catalog.pg_attribute ta ON ta.attrelid = (SELECT oid FROM tomb) AND ta.attname = k.attname AND ta.attnum > 0 AND NOT ta.attisdropped
  LEFT JOIN tk ON tk.attname = k.attname
WHERE EXISTS (SELECT 1 FROM tomb)
ORDER BY k.ord`, regclass(t.Table), tombName)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	var differ, fix []string
	sameColumns := true
	for _, r := range rows {
		if len(r) < 8 {
			return nil, nil
		}
		if r[4] != "1" || r[5] != strconv.Itoa(len(rows)) {
			sameColumns = false
		}
		if r[3] != "1" {
			in := r[2]
			if in == "" {
				in = "none"
			}
			differ = append(differ, r[0]+" ("+r[1]+" in the table, "+in+" in the tombstone table)")
			if r[2] != "" {
				alter := "ALTER COLUMN " + d.QuoteIdent(r[0]) + " TYPE " + r[1]
				if r[6] != "" {
					alter += " COLLATE " + r[6]
				}
				fix = append(fix, alter)
			}
		}
	}
	if sameColumns && len(differ) == 0 {
		return nil, nil
	}
	tomb := dialect.CatalogName(rows[0][7], tombName)
	if !sameColumns {
		fix = nil // the key's columns changed: no statement converts them
	}
	var stmts []string
	if fix != nil {
		stmts = []string{"ALTER TABLE " + tomb.Quote(d.QuoteIdent) + " " + strings.Join(fix, ", ")}
	}
	return []dialect.SideDoor{dialect.TombstoneKeyDoor(tomb.String(), t.Table.String(), differ, stmts, false)}, nil
}
