package sqlite

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// SideDoors finds the database-level side doors of a guarded table
// (dialect.SideDoorFinder), which schema.Check reports:
//
//   - foreign keys of the table with ON DELETE CASCADE: deleting a row of the
//     referenced table (which the wrapper does not fence) deletes the table's rows.
//     SQLite runs the table's triggers for the cascade (the tombstone of each row is
//     recorded), but its guard does not cover DELETE: a problem. SQLite cannot alter a
//     constraint, so there is no statement: rebuild the table with ON DELETE RESTRICT
//     (or NO ACTION), or delete the referencing rows through the wrapper first.
//     ON DELETE SET NULL / SET DEFAULT and ON UPDATE CASCADE / SET NULL / SET DEFAULT
//     change the rows by an UPDATE that does not advance the version, which the guard
//     refuses (the referenced table's write fails): a note. Foreign keys act only on
//     connections with PRAGMA foreign_keys = ON.
//   - views whose INSTEAD OF triggers write the table (a view is read-only in SQLite
//     without them): an INSERT, UPDATE or DELETE on the view does not name the table,
//     so the wrapper sends it as written and the trigger writes the table unfenced.
//     Fix: drop those triggers (DROP TRIGGER).
//
// The table's name is matched as a word in the triggers' text (any quoting, any case).
func (d dialectImpl) SideDoors(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	var doors []dialect.SideDoor
	fks, err := d.cascades(ctx, query, t)
	if err != nil {
		return nil, err
	}
	doors = append(doors, fks...)
	views, err := d.viewTriggers(ctx, query, t)
	if err != nil {
		return nil, err
	}
	return append(doors, views...), nil
}

func (d dialectImpl) cascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	q, args := `SELECT id, seq, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?)`, []any{t.Table.Name}
	if t.Table.Schema != "" {
		q, args = `SELECT id, seq, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?, ?)`, []any{t.Table.Name, t.Table.Schema}
	}
	rows, err := query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	type fk struct {
		seq          []int
		ref          string
		from, to     []string
		onUpd, onDel string
	}
	byID := map[string]*fk{}
	var ids []string
	for _, r := range rows {
		if len(r) < 7 {
			continue
		}
		f := byID[r[0]]
		if f == nil {
			f = &fk{ref: r[2], onUpd: strings.ToUpper(r[5]), onDel: strings.ToUpper(r[6])}
			byID[r[0]] = f
			ids = append(ids, r[0])
		}
		f.from = append(f.from, r[3])
		f.to = append(f.to, r[4])
	}
	sort.Slice(ids, func(i, j int) bool { a, _ := strconv.Atoi(ids[i]); b, _ := strconv.Atoi(ids[j]); return a < b })
	var doors []dialect.SideDoor
	for _, id := range ids {
		f := byID[id]
		obj := "(" + strings.Join(f.from, ", ") + ") REFERENCES " + f.ref + " (" + strings.Join(f.to, ", ") + ")"
		changes := func(rule string) bool { return rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT" }
		switch {
		case f.onDel == "CASCADE":
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj,
				Problem: "ON DELETE CASCADE: a DELETE of " + f.ref + " (not fenced by the wrapper) deletes rows of " + t.Table.String() +
					" unfenced, and the guard does not cover DELETE on SQLite (the tombstones are recorded); SQLite cannot alter a constraint: rebuild " +
					t.Table.String() + " with ON DELETE RESTRICT, or delete its rows through the wrapper before the " + f.ref + " row"})
		case changes(f.onDel) || changes(f.onUpd):
			rule := "ON DELETE " + f.onDel
			if !changes(f.onDel) {
				rule = "ON UPDATE " + f.onUpd
			}
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj, Note: true,
				Problem: rule + ": SQLite runs the triggers of " + t.Table.String() + " for the cascaded UPDATE, which does not advance the version: the guard refuses it, so the write to " + f.ref + " fails unless the rows were changed through the wrapper first"})
		}
	}
	return doors, nil
}

func (d dialectImpl) viewTriggers(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	master := "sqlite_master"
	if t.Table.Schema != "" {
		master = d.QuoteIdent(t.Table.Schema) + ".sqlite_master"
	}
	rows, err := query(ctx, "SELECT v.name, tr.name, tr.sql FROM "+master+" tr JOIN "+master+" v ON v.type = 'view' AND v.name = tr.tbl_name COLLATE NOCASE WHERE tr.type = 'trigger' ORDER BY v.name, tr.name")
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 3 || !mentions(r[2], t.Table.Name) {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[1]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorView, Object: r[0] + " (trigger " + r[1] + ")",
			Problem: "the INSTEAD OF trigger " + r[1] + " of view " + r[0] + " writes " + t.Table.String() + ": a write to the view is not fenced by the wrapper (it matches table names); drop the trigger (or write through the table)",
			Fix:     []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

// mentions reports whether the SQL text s holds name as an identifier, in any case,
// bare or quoted ("", “, []).
func mentions(s, name string) bool {
	ls, ln := strings.ToLower(s), strings.ToLower(name)
	ident := func(b byte) bool {
		return b == '_' || b == '$' || b >= 0x80 || (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z')
	}
	for i := 0; ; {
		j := strings.Index(ls[i:], ln)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(ln)
		if (j == 0 || !ident(ls[j-1])) && (end == len(ls) || !ident(ls[end])) {
			return true
		}
		i = j + 1
	}
}

var _ dialect.SideDoorFinder = dialectImpl{}
