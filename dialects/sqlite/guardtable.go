package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardTableProblems is the one check of a guard table's shape (dialect.SideDoorGuardTable),
// which both guardTables (schema.Check, the lazy check) and GuardFloorsQuery (the floor
// tools) run: a query yielding tag, then one row per way the table table of schema
// (main when empty) is not as the guards create it — ("column", the declared type)
// when its column col is not NOT NULL with INTEGER affinity (a type containing INT:
// TEXT compares '9' above '10' in the max() that keeps the greater tombstone token or
// floor, REAL rounds tokens above 2^53), and ("foreign key", the reference) for each of
// its foreign keys (the guards create none: a cascade from an ordinary table, which
// the fenced pool sends as written, erases tombstones or lowers the floor) (red-team
// rt27c F1–F4), and ("index", its name) for each UNIQUE constraint or index besides
// its key (the guards create none: under its own ON CONFLICT REPLACE, the tombstone
// triggers' upsert of one key deleted another key's tombstone, red-team rt29a F6), and
// ("generated", its name) for each generated column and ("missing", its name) for col
// or a column of also that the table lacks (the guards write every column they create,
// and a write to a generated or missing one fails every write of the guarded table
// with SQLite's own error; pragma_table_info leaves generated columns out, so
// pragma_table_xinfo is read: red-team rt47g F1). No row for a table that does not
// exist. Triggers on a guard table are guardWriters'.
func (d dialectImpl) guardTableProblems(tag, schema, table, col string, also ...string) string {
	if schema == "" {
		schema = "main"
	}
	t, s := literal(table), literal(schema)
	missing := ""
	for _, c := range append([]string{col}, also...) {
		missing += " UNION ALL SELECT " + literal(tag) + ", 'missing', " + literal(c) +
			" WHERE EXISTS (SELECT 1 FROM pragma_table_xinfo(" + t + ", " + s + ")) AND NOT EXISTS (SELECT 1 FROM pragma_table_xinfo(" + t + ", " + s + ") tx WHERE tx.name = " + literal(c) + " COLLATE NOCASE)"
	}
	return "SELECT " + literal(tag) + ", 'column', ti.type || CASE WHEN ti.\"notnull\" THEN ' NOT NULL' ELSE '' END FROM pragma_table_xinfo(" + t + ", " + s + ") ti" +
		" WHERE ti.name = " + literal(col) + " COLLATE NOCASE AND ti.hidden NOT IN (2, 3) AND NOT (ti.\"notnull\" AND upper(ti.type) LIKE '%INT%')" +
		" UNION ALL SELECT " + literal(tag) + ", 'generated', tx.name FROM pragma_table_xinfo(" + t + ", " + s + ") tx WHERE tx.hidden IN (2, 3)" + missing +
		" UNION ALL SELECT " + literal(tag) + ", 'foreign key', '(' || group_concat(fk.\"from\", ', ') || ') REFERENCES ' || fk.\"table\"" +
		" || ' ON DELETE ' || fk.on_delete || ' ON UPDATE ' || fk.on_update FROM pragma_foreign_key_list(" + t + ", " + s + ") fk GROUP BY fk.id" +
		" UNION ALL SELECT " + literal(tag) + ", 'index', il.name FROM pragma_index_list(" + t + ", " + s + ") il WHERE il.\"unique\" AND il.origin <> 'pk'"
}

// floorSafe is the SQL condition that schema's floor table is safe for the floor
// tools to read and write (GuardFloorsQuery's third and fourth columns): the shape the
// guards create it with (guardTableProblems), and no trigger on it (one could turn the
// raise into a no-op: RaiseTokenFloor would report a floor it did not write).
func (d dialectImpl) floorSafe(schema string) string {
	return "NOT EXISTS (" + d.guardTableProblems("floor", schema, dialect.FloorTable, "floor") + ")" +
		" AND NOT EXISTS (SELECT 1 FROM " + d.master(schema) + " WHERE type = 'trigger' AND tbl_name = " + literal(dialect.FloorTable) + " COLLATE NOCASE)"
}

// guardTables finds the guard tables of t's schema — t's tombstone table, the token
// floor — that are not as the guards create them (guardTableProblems), in one query:
// CREATE TABLE IF NOT EXISTS keeps whatever table is there, and the guards would
// compare tokens as text or lose tombstones and the floor to a cascade while every
// guard trigger is as installed (red-team rt27c F1–F4). A door each (TriggerDoorFinder:
// the lazy check refuses the table). Fix: rebuild the table as the guards create it,
// copying its rows (the tombstones through rebuildTombstones, keeping the greater
// token; the floor's row, as an integer) — for the tombstone table only while its key
// is the table's primary key (else tombstoneKey's door says what to do). A rebuild
// restores what is left: a tombstone or a raise recorded lower meanwhile stays lower,
// so the problem asks for a raise of the floor after it.
func (d dialectImpl) guardTables(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" {
		return nil, nil
	}
	schema := t.Table.Schema
	if schema == "main" {
		schema = ""
	}
	tomb := tombObject("", dialect.TableName{Schema: schema, Name: t.Table.Name})
	floor := floorTable(schema)
	rows, err := query(ctx, d.guardTableProblems("tomb", schema, tomb.Name, "fence_token", "deleted_at")+" UNION ALL "+d.guardTableProblems("floor", schema, floor.Name, "floor"))
	if err != nil {
		return nil, err
	}
	found := map[string][]string{}
	lacks := map[string]bool{} // a guard table without a column the guards write
	for _, r := range rows {
		if len(r) < 3 {
			continue
		}
		what := r[2]
		if r[1] == "column" {
			col := "fence_token"
			if r[0] == "floor" {
				col = "floor"
			}
			what = "column " + col + " " + strings.TrimSpace(r[2]) + ", not a NOT NULL INTEGER"
		} else if r[1] == "index" {
			what = "unique index " + what + " besides the key"
		} else if r[1] == "generated" {
			what = "generated column " + what + " (the guards write every column)"
		} else if r[1] == "missing" {
			what = "no column " + what
			lacks[r[0]] = true
		} else {
			what = "foreign key " + what
		}
		found[r[0]] = append(found[r[0]], what)
	}
	var doors []dialect.SideDoor
	if p := found["tomb"]; len(p) > 0 {
		var fix []string
		if !lacks["tomb"] {
			if fix, err = d.tombTableFix(ctx, query, t); err != nil {
				return nil, err
			}
		}
		door := dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: tomb.String(),
			Problem: "the tombstone table " + tomb.String() + " of " + t.Table.String() + " is not as the guards create it (" + strings.Join(p, "; ") +
				"): tokens compared as text keep a lower tombstone ('60' above '100'), a cascade from an ordinary table, sent as written through the pool, erases tombstones, and a unique index of its own makes recording one tombstone replace another, so a stale holder re-inserts a deleted key",
			Fix: fix}
		if fix != nil {
			door.Problem += "; the fix rebuilds it as the guards create it, keeping its tombstones (tokens as integers)"
		} else if lacks["tomb"] {
			door.Problem += "; it lacks a column the guards write: add it as the guards create it (fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL), then re-run fencedsql-schema -apply"
		} else {
			door.Problem += "; its key is not the table's primary key either (see the tombstone key door): drop it and re-run fencedsql-schema -apply"
		}
		door.Problem += "; a tombstone recorded lower meanwhile stays lower: raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor) after it"
		doors = append(doors, door)
	}
	if p := found["floor"]; len(p) > 0 {
		fix := d.rebuildFloor(schema)
		if lacks["floor"] {
			fix = nil // the rebuild copies the floor column: drop the table and re-run fencedsql-schema -apply, then raise the floor
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: floor.String(),
			Problem: "the token floor " + floor.String() + " that the guards of " + t.Table.String() + " read is not as the guards create it (" + strings.Join(p, "; ") +
				"): a floor compared as text keeps a lower one ('9' above '100': a raise is lost), and a cascade from an ordinary table, sent as written through the pool, lowers it, so a stale holder writes below the floor" +
				"; the fix rebuilds it as the guards create it, keeping its floor (as an integer); a raise lost meanwhile stays lost: raise the token floor again to the lock service's LastToken + 1 (RaiseTokenFloor) after it",
			Fix: fix})
	}
	return doors, nil
}

// tombTableFix returns the rebuild of t's tombstone table (rebuildTombstones) when its
// key is t's primary key as it is now (tombstoneKey finds no door), else nil.
func (d dialectImpl) tombTableFix(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]string, error) {
	keyDoors, err := d.tombstoneKey(ctx, query, t)
	if err != nil || len(keyDoors) > 0 {
		return nil, err
	}
	_, key, err := dialect.PrimaryKeyColumns(ctx, query, d, t.Table)
	if err != nil || len(key) == 0 {
		return nil, err
	}
	return d.rebuildTombstones(t.Table, key, t.TokenColumn), nil
}

// rebuildFloor returns the statements that re-create schema's floor table as floorDDL
// creates it, its row copied through a scratch table (the floor as an integer, at
// least 0; a lost row stays lost: the guards refuse every write until a raise writes
// it back).
func (d dialectImpl) rebuildFloor(schema string) []string {
	t := floorTable(schema).Quote(d.QuoteIdent)
	scratch := dialect.TableName{Schema: schema, Name: dialect.FloorTable + "copy"}.Quote(d.QuoteIdent)
	return []string{
		"DROP TABLE IF EXISTS " + scratch,
		"CREATE TABLE " + scratch + " AS SELECT id, floor FROM " + t,
		"DROP TABLE " + t,
		d.floorDDL(schema)[0],
		"INSERT INTO " + t + " (id, floor) SELECT 1, max(max(CAST(floor AS INTEGER)), 0) FROM " + scratch + " WHERE id = 1 HAVING count(*) > 0",
		"DROP TABLE " + scratch,
	}
}
