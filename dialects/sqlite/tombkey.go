package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tombstoneKey finds a tombstone table whose key is no longer the table's primary key
// (dialect.SideDoorTombstoneKey). SQLite changes a column only by rebuilding the table
// (a new table, the rows copied, the old one dropped, the new one renamed): the
// rebuild drops the table's triggers, schema.Check's Fix installs them again, and
// TombstoneDDL's CREATE TABLE IF NOT EXISTS keeps the tombstone table keyed as the key
// was. A key column that became COLLATE NOCASE then finds no tombstone of 'Alice' for
// a stale INSERT of 'alice'; a key that gained a column makes every tombstone trigger
// fail with SQLite's untyped "no such column" (red-team rt23b F2, F3). Two reads of
// PrimaryKeyQuery, the table's and the tombstone table's, compared column by column:
// name, declared type and collation (an INTEGER PRIMARY KEY has no index of its own
// and compares as BINARY). Fix, when the columns are the same and the new key's
// comparison only merges the tombstones' (from BINARY, or the same collation): rebuild
// the tombstone table with the key as it is now, copying the tombstones and keeping
// the greater token where two become one key; otherwise none (the tombstones name the
// old key, or a class a narrower collation splits). A tombstone table without a primary
// key is a door without a Fix.
func (d dialectImpl) tombstoneKey(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" {
		return nil, nil
	}
	tomb := tombObject("", t.Table)
	_, tkey, err := dialect.PrimaryKeyColumns(ctx, query, d, tomb)
	if err != nil {
		return nil, err
	}
	if len(tkey) == 0 {
		// No tombstone table, or one without a primary key (re-created by hand): the
		// latter is a door without a Fix (its tombstones' classes are not known).
		rows, err := query(ctx, "SELECT 1 FROM "+d.master(t.Table.Schema)+" WHERE type = 'table' AND name = ? COLLATE NOCASE", tomb.Name)
		if err != nil || len(rows) == 0 {
			return nil, err
		}
		return []dialect.SideDoor{dialect.TombstoneKeyDoor(tomb.String(), t.Table.String(), []string{"no primary key in the tombstone table"}, nil, true)}, nil
	}
	_, key, err := dialect.PrimaryKeyColumns(ctx, query, d, t.Table)
	if err != nil {
		return nil, err
	}
	coll := func(c string) string {
		if c == "" {
			return "BINARY"
		}
		return c
	}
	sameColumns := len(key) == len(tkey)
	// merges: every tombstone maps to the key's class it stood for. A BINARY tombstone
	// key compares no two spellings equal, so any other collation only merges them; a
	// tombstone recorded under NOCASE or RTRIM kept the first spelling of its class
	// ('Bob' for a later 'bob'), which a narrower collation would tell apart (red-team
	// rt24a F6): no Fix then.
	merges := true
	var differ []string
	for i, k := range key {
		if i >= len(tkey) || !sameName(k.Name, tkey[i].Name) {
			sameColumns = false
			continue
		}
		if !sameName(k.Type, tkey[i].Type) || !sameName(coll(k.Collation), coll(tkey[i].Collation)) {
			differ = append(differ, k.Name+" ("+k.Type+" COLLATE "+coll(k.Collation)+" in the table, "+tkey[i].Type+" COLLATE "+coll(tkey[i].Collation)+" in the tombstone table)")
			if !sameName(coll(tkey[i].Collation), "BINARY") && !sameName(coll(k.Collation), coll(tkey[i].Collation)) {
				merges = false
			}
		}
	}
	if sameColumns && len(differ) == 0 {
		return nil, nil
	}
	var fix []string
	if sameColumns && merges {
		fix = d.rebuildTombstones(t.Table, key, t.TokenColumn)
	}
	return []dialect.SideDoor{dialect.TombstoneKeyDoor(tomb.String(), t.Table.String(), differ, fix, true)}, nil
}

// rebuildTombstones returns the statements that re-create table's tombstone table
// keyed by key (TombstoneDDL's), its tombstones copied through a scratch table and
// merged where two become one key (the greater token, the later time).
func (d dialectImpl) rebuildTombstones(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	if table.Schema == "main" {
		table.Schema = ""
	}
	tomb := tombObject("", table).Quote(d.QuoteIdent)
	scratch := tombObject("copy", table).Quote(d.QuoteIdent)
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
	}
	list := strings.Join(cols, ", ")
	return []string{
		"DROP TABLE IF EXISTS " + scratch,
		"CREATE TABLE " + scratch + " AS SELECT " + list + ", fence_token, deleted_at FROM " + tomb,
		"DROP TABLE " + tomb,
		d.TombstoneDDL(table, key, tokenCol)[0],
		"INSERT INTO " + tomb + " (" + list + ", fence_token, deleted_at) SELECT " + list + ", fence_token, deleted_at FROM " + scratch + " WHERE true " +
			"ON CONFLICT (" + list + ") DO UPDATE SET fence_token = max(fence_token, excluded.fence_token), deleted_at = max(deleted_at, excluded.deleted_at)",
		"DROP TABLE " + scratch,
	}
}
