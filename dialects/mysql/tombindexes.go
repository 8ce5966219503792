package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardTableIndexes finds the unique indexes (UNIQUE keys and constraints, prefix,
// functional and hash ones alike) of the guards' own tables — t's tombstone table and
// the token floor of its database — besides their PRIMARY KEY
// (dialect.SideDoorGuardTable; red-team rt46a F1). The guards create none, and they
// write both tables with INSERT … ON DUPLICATE KEY UPDATE, which updates the row that
// any unique index finds: a UNIQUE KEY on fence_token, or on a prefix of the key
// (id(1): 'bx' meets 'by'), makes the tombstone trigger's (or the absence recorder's)
// upsert of one key's tombstone update another key's row (GREATEST of the tokens),
// the deleted key gets none, and a stale holder inserts it again while every guard
// trigger is intact. One catalog query for both tables, on constants (as
// guardTables'). Fix: ALTER TABLE … DROP INDEX; none when the table has no PRIMARY
// KEY (tombstoneKey reports it: drop the table and re-run fencedsql-schema -apply). A
// tombstone folded into another key's row meanwhile stays lost: the problem asks for
// a raise of the token floor afterwards. information_schema shows an account only the
// indexes of tables it holds a right on: the lazy check of an application account
// without one on the tombstone table sees none (as for its triggers and foreign keys,
// guardTableSafe), so schema.Check, run by the migration account, is the check that
// counts.
func (d dialectImpl) guardTableIndexes(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	tomb, floor := tombTable(t.Table), floorTable(t.Table.Schema)
	rows, err := query(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, COALESCE(COLUMN_NAME, '(expression)'), COALESCE(SUB_PART, '') "+
		"FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME IN (?, ?) AND NON_UNIQUE = 0 "+
		"ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX", t.Table.Schema, tomb.Name, floor.Name)
	if err != nil {
		return nil, err
	}
	type index struct {
		name    string
		columns []string
	}
	type found struct {
		rel        dialect.TableName
		indexes    []*index
		primaryKey bool
	}
	var order []*found
	by := map[string]*found{}
	for _, r := range rows {
		if len(r) < 5 {
			continue
		}
		f := by[strings.ToLower(r[1])]
		if f == nil {
			f = &found{rel: dialect.TableName{Schema: r[0], Name: r[1]}}
			by[strings.ToLower(r[1])] = f
			order = append(order, f)
		}
		if r[2] == "PRIMARY" {
			f.primaryKey = true
			continue
		}
		if n := len(f.indexes); n == 0 || f.indexes[n-1].name != r[2] {
			f.indexes = append(f.indexes, &index{name: r[2]})
		}
		col := r[3]
		if r[4] != "" {
			col += "(" + r[4] + ")"
		}
		ix := f.indexes[len(f.indexes)-1]
		ix.columns = append(ix.columns, col)
	}
	var doors []dialect.SideDoor
	for _, f := range order {
		if len(f.indexes) == 0 {
			continue
		}
		tbl := f.rel.Quote(d.QuoteIdent)
		var what, drop []string
		for _, ix := range f.indexes {
			what = append(what, "the unique index "+ix.name+" ("+strings.Join(ix.columns, ", ")+")")
			drop = append(drop, "DROP INDEX "+d.QuoteIdent(ix.name))
		}
		kind, lost := "the tombstone table", "a tombstone recorded into another key's row lets a stale holder insert the deleted key again"
		if strings.EqualFold(f.rel.Name, floor.Name) {
			kind, lost = "the token floor", "a raise recorded into another row leaves the floor the guards read lower than raised"
		}
		door := dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: f.rel.String(),
			Problem: kind + " " + f.rel.String() + ", which the guards of " + t.Table.String() + " read, has a unique index besides its PRIMARY KEY: " + strings.Join(what, "; ") +
				". The guards create none and write the table with INSERT … ON DUPLICATE KEY UPDATE, which updates the row any unique index finds: " + lost +
				", while the guard triggers themselves look intact"}
		if f.primaryKey {
			door.Problem += "; the fix drops it"
			door.Fix = []string{"ALTER TABLE " + tbl + " " + strings.Join(drop, ", ")}
		} else {
			door.Problem += "; the table has no PRIMARY KEY either: drop it and re-run fencedsql-schema -apply"
		}
		door.Problem += "; what was folded meanwhile stays lost: afterwards raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)"
		doors = append(doors, door)
	}
	return doors, nil
}
