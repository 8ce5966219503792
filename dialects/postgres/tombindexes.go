package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardTableIndexes finds the unique indexes, unique constraints and exclusion
// constraints of the guards' own tables — t's tombstone table (in t's own schema) and
// the token floor its guard functions read (floorSchemaSQL) — besides their primary
// key (dialect.SideDoorGuardTable; red-team rt46a F1). The guards create none, and
// they write both tables by an upsert whose arbiters are every unique index on
// exactly the key's columns, whatever its collation or predicate-free opclass: the
// tombstone function's and the absence recorder's INSERT … ON CONFLICT (<key>), the
// floor's ON CONFLICT (id). A unique index on the key under a looser equality (a
// nondeterministic ICU collation: 'ALICE' = 'alice') makes the upsert of one key's
// tombstone update another key's row, and the insert probe, comparing with the key's
// own equality, then finds no tombstone of the deleted key: a stale holder inserts it
// again while every guard object is intact. Any other unique index (on fence_token, a
// partial or an expression index) or exclusion constraint is no arbiter but makes
// recording a tombstone fail (fail closed); it is reported too, as SQLite's check
// does ("unique index … besides the key"), rather than telling the harmless ones
// apart. One catalog query for both tables. Fix: DROP INDEX, or ALTER TABLE … DROP
// CONSTRAINT for one that backs a constraint; none when the table has no primary key
// (tombstoneKey reports it: drop the table and re-run fencedsql-schema -apply). A
// tombstone folded into another key's row meanwhile stays lost: the problem asks for
// a raise of the token floor afterwards.
func (d dialectImpl) guardTableIndexes(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	tombName := tombTable(fold(t.Table)).Name
	args := append([]any{tombName}, floorSchemaArgs(t.Table)...)
	rows, err := query(ctx, `WITH w(what, oid) AS (VALUES
  ('tomb', (SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname = $1
    AND c.relnamespace = (SELECT r.relnamespace FROM pg_catalog.pg_class r WHERE r.oid = pg_catalog.to_regclass($2)))),
  ('floor', (SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relname = $6 AND n.nspname = `+floorSchemaSQL(2)+`)))
SELECT w.what, n.nspname::text, c.relname::text, x.relname::text, COALESCE(k.conname::text, ''),
  COALESCE(pg_catalog.pg_get_constraintdef(k.oid), pg_catalog.pg_get_indexdef(i.indexrelid)),
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_index p WHERE p.indrelid = c.oid AND p.indisprimary) THEN 1 ELSE 0 END
FROM w JOIN pg_catalog.pg_class c ON c.oid = w.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND (i.indisunique OR i.indisexclusion) AND NOT i.indisprimary
  JOIN pg_catalog.pg_class x ON x.oid = i.indexrelid
  LEFT JOIN pg_catalog.pg_constraint k ON k.conindid = i.indexrelid AND k.conrelid = c.oid AND k.contype IN ('u', 'x')
ORDER BY w.what DESC, x.relname`, args...)
	if err != nil {
		return nil, err
	}
	type found struct {
		rel        dialect.TableName
		what, fix  []string
		primaryKey bool
	}
	var order []string
	by := map[string]*found{}
	for _, r := range rows {
		if len(r) < 7 {
			continue
		}
		f := by[r[0]]
		if f == nil {
			f = &found{rel: dialect.CatalogName(r[1], r[2]), primaryKey: r[6] == "1"}
			by[r[0]] = f
			order = append(order, r[0])
		}
		tbl := f.rel.Quote(d.QuoteIdent)
		if r[4] != "" {
			f.what = append(f.what, "the constraint "+r[4]+" ("+r[5]+")")
			f.fix = append(f.fix, "ALTER TABLE "+tbl+" DROP CONSTRAINT IF EXISTS "+d.QuoteIdent(r[4]))
		} else {
			f.what = append(f.what, "the unique index "+r[3]+" ("+r[5]+")")
			f.fix = append(f.fix, "DROP INDEX IF EXISTS "+dialect.CatalogName(r[1], r[3]).Quote(d.QuoteIdent))
		}
	}
	var doors []dialect.SideDoor
	for _, w := range order {
		f := by[w]
		what, lost := "the tombstone table", "a tombstone recorded into another key's row lets a stale holder insert the deleted key again"
		if w == "floor" {
			what, lost = "the token floor", "a raise recorded into another row leaves the floor the guards read lower than raised"
		}
		door := dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: f.rel.String(),
			Problem: what + " " + f.rel.String() + " that the guards of " + t.Table.String() + " read has a unique index besides its key: " + strings.Join(f.what, "; ") +
				". The guards create none and write the table with INSERT … ON CONFLICT, whose arbiters are every unique index on the key's columns: one under a looser equality (a nondeterministic collation) folds one key's row into another's, and " +
				lost + ", while the guards themselves look intact (any other unique index makes the guards' writes fail)"}
		if f.primaryKey {
			door.Problem += "; the fix drops it"
			door.Fix = f.fix
		} else {
			door.Problem += "; the table has no primary key either: drop it and re-run fencedsql-schema -apply"
		}
		door.Problem += "; what was folded meanwhile stays lost: afterwards raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)"
		doors = append(doors, door)
	}
	return doors, nil
}
