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
//   - foreign keys of the table with ON DELETE CASCADE (cascades, one of the
//     TriggerDoors, so the lazy check refuses the table too): deleting a row of the
//     referenced table deletes the table's rows without their own fence. SQLite runs
//     the table's triggers for the cascade, but its guard does not cover DELETE, and
//     the tombstone of each row is recorded at the row's own token, not at the token
//     of the DELETE that cascaded (the wrapper's two-statement DELETE stamps only the
//     referenced table's rows), so a holder older than the deleter but newer than the
//     row re-inserts the key (red-team rt42a F3): a problem. SQLite cannot alter a
//     constraint, so there is no statement: rebuild the table with ON DELETE RESTRICT
//     (or NO ACTION), and delete the referencing rows through the wrapper first. The
//     same key is a door of the referenced table too when the referencing table is
//     guarded (referencingCascades, cascadedoor.go): its DELETE through the pool is
//     refused before it cascades (red-team rt49b F1). Both ask for a token floor raise:
//     rows already deleted carry tombstones at their own token.
//     ON DELETE SET NULL / SET DEFAULT and ON UPDATE CASCADE / SET NULL / SET DEFAULT
//     change the rows by an UPDATE that does not advance the version, which the guard
//     refuses (the referenced table's write fails): a note — a problem where the
//     table does not carry the guard's UPDATE trigger (wrapper-only fencing: nothing
//     refuses it; red-team rt65a F1, one rule with PostgreSQL's cascades) — unless the key's columns
//     include the token or version column (fencingCascade): then the UPDATE sets the
//     version (to the referenced row's new value, or to NULL or the default), a higher
//     one passes the guard, and a write of the referenced table, which the wrapper does
//     not fence, rewrites the rows at their own token (red-team rt50d F1, the twin of
//     PostgreSQL's cascades): a problem without a Fix statement (rebuild the
//     table with NO ACTION/RESTRICT, or without the fencing columns in the key).
//     Foreign keys act only on connections with PRAGMA foreign_keys = ON (a
//     constraint counts whatever the pragma: another connection may turn it on).
//   - views whose INSTEAD OF triggers write the table (a view is read-only in SQLite
//     without them): an INSERT, UPDATE or DELETE on the view does not name the table,
//     so the wrapper sends it as written and the trigger writes the table unfenced.
//     Fix: drop those triggers (DROP TRIGGER).
//   - the doors a statement through the pool opens (TriggerDoors, which the lazy
//     check also runs): the views above, triggers on other tables, guarded or not,
//     whose body writes the table, the table's own triggers that may undo the fencing
//     NULL or skip a guard's trigger (ownTriggers: BEFORE INSERT or UPDATE ones naming
//     a fencing column, and any that writes the table itself or uses RAISE(IGNORE)),
//     and a guard a table swap lost (lostGuard).
//
// The table's name is matched as a word in the triggers' text (any quoting, any case).
func (d dialectImpl) SideDoors(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	return dialect.FindDoors(ctx, query, t, d.uniqueExpressions, d.TriggerDoors)
}

// uniqueExpressions finds the UNIQUE indexes of a tombstoned table on an expression
// (dialect.SideDoorUniqueExpression): a REPLACE that collides on one (from a plain
// connection; CREATE UNIQUE INDEX takes no ON CONFLICT clause) deletes the row without
// its delete triggers, and the tombstone guard's REPLACE triggers, which compare
// unique indexes column by column (TombstoneUniqueDDL), cannot tell which row: no
// tombstone, so a holder older than the row may insert its key again. A problem with
// no Fix (schema.Check only: the wrapper refuses the OR clauses, so the lazy check
// does not refuse the table for it).
func (d dialectImpl) uniqueExpressions(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" || !t.Tombstones {
		return nil, nil
	}
	unique, err := dialect.UniqueIndexes(ctx, query, d, t.Table)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, u := range unique {
		if !u.Expression() {
			continue
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorUniqueExpression, Object: u.Name + " on " + t.Table.String(),
			Problem: "the UNIQUE index " + u.Name + " on " + t.Table.String() + " is on an expression: a REPLACE that collides on it (INSERT OR REPLACE, REPLACE, UPDATE OR REPLACE from a plain connection) " +
				"deletes the row without its delete triggers, and the tombstone guard, which compares unique indexes column by column, cannot record it: a holder older than that row may insert its key again. " +
				"Index a column instead (e.g. a generated column holding the expression), or write that table through the wrapper only (it refuses the OR clauses)"})
	}
	return doors, nil
}

// cascades: the table's foreign keys whose actions change its rows (described at
// SideDoors): ON DELETE CASCADE and a writing action over a fencing column
// (fencingCascade) are problems without a Fix statement, any other writing action a
// note. One query (pragma_foreign_key_list).
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
			f = &fk{ref: r[2], onUpd: upperWord(r[5]), onDel: upperWord(r[6])}
			byID[r[0]] = f
			ids = append(ids, r[0])
		}
		f.from = append(f.from, r[3])
		f.to = append(f.to, r[4])
	}
	sort.Slice(ids, func(i, j int) bool { a, _ := strconv.Atoi(ids[i]); b, _ := strconv.Atoi(ids[j]); return a < b })
	var doors []dialect.SideDoor
	var guarded *bool // guardsUpdates, asked once when a note candidate needs it
	for _, id := range ids {
		f := byID[id]
		obj := "(" + strings.Join(f.from, ", ") + ") REFERENCES " + f.ref + " (" + strings.Join(f.to, ", ") + ")"
		var writing []string // the rules that change the rows by an UPDATE
		if f.onDel == "SET NULL" || f.onDel == "SET DEFAULT" {
			writing = append(writing, "ON DELETE "+f.onDel)
		}
		if f.onUpd == "CASCADE" || f.onUpd == "SET NULL" || f.onUpd == "SET DEFAULT" {
			writing = append(writing, "ON UPDATE "+f.onUpd)
		}
		if f.onDel == "CASCADE" {
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj,
				Problem: "ON DELETE CASCADE: a DELETE of " + f.ref + " (fenced for " + f.ref + " only, or not fenced at all) deletes rows of " + t.Table.String() +
					" without their fence, and their tombstones record each row's own token, not the deleting token, so a holder older than the deleter re-inserts a deleted key " +
					"(the guard does not cover DELETE on SQLite); SQLite cannot alter a constraint: rebuild " +
					t.Table.String() + " with ON DELETE RESTRICT, and delete its rows through the wrapper before the " + f.ref + " row" + cascadeLost})
		}
		if len(writing) == 0 {
			continue
		}
		if cols := fencingCascade(f.from, t); len(cols) > 0 {
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj,
				Problem: strings.Join(writing, ", ") + " writes the fencing column " + strings.Join(cols, ", ") + " of " + t.Table.String() +
					": a write of " + f.ref + " (which the wrapper does not fence) sets it in the rows it reaches, and a version set higher passes the guard, " +
					"so a stale holder, or a write without a token, may rewrite rows written under a newer token; SQLite cannot alter a constraint: rebuild " +
					t.Table.String() + " with the foreign key ON DELETE/ON UPDATE NO ACTION or RESTRICT, or without the fencing columns"})
		} else if f.onDel != "CASCADE" {
			if guarded == nil {
				g, err := d.guardsUpdates(ctx, query, t.Table)
				if err != nil {
					return nil, err
				}
				guarded = &g
			}
			if !*guarded {
				// No guard trigger to refuse the cascaded UPDATE (wrapper-only fencing):
				// a door, as a trigger on f.ref doing the same write (red-team rt65a F1).
				doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj,
					Problem: strings.Join(writing, ", ") + ": a write of " + f.ref + " (which the wrapper does not fence for the rows of " + t.Table.String() +
						"), through the pool too, with a stale token or none, rewrites rows of " + t.Table.String() + " written under a newer token, and no installed guard trigger (" +
						guardTrigger(t.Table.Name) + ") refuses it; install the guard (fencedsql-schema -apply), or rebuild " + t.Table.String() + " with the foreign key ON DELETE/ON UPDATE NO ACTION or RESTRICT"})
				continue
			}
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj, Note: true,
				Problem: writing[0] + ": SQLite runs the triggers of " + t.Table.String() + " for the cascaded UPDATE, which does not advance the version: the guard refuses it, so the write to " + f.ref + " fails unless the rows were changed through the wrapper first"})
		}
	}
	return doors, nil
}

// guardsUpdates reports whether the table carries the guard's BEFORE UPDATE trigger
// (fencedsql_guard_<table>), which refuses a cascaded UPDATE that does not advance
// the version. A trigger of that name not as the guard writes it is guardTriggers'
// door. One query.
func (d dialectImpl) guardsUpdates(ctx context.Context, query dialect.CatalogQuery, table dialect.TableName) (bool, error) {
	master := "sqlite_master"
	if table.Schema != "" {
		master = d.QuoteIdent(table.Schema) + ".sqlite_master"
	}
	rows, err := query(ctx, "SELECT 1 FROM "+master+" WHERE type = 'trigger' AND name = ? COLLATE NOCASE AND tbl_name = ? COLLATE NOCASE", guardTrigger(table.Name), table.Name)
	if err != nil {
		return false, err
	}
	return len(rows) > 0, nil
}

// fencingCascade returns the fencing columns of t (token, version) among a foreign
// key's referencing columns from, which every writing action of the key (ON UPDATE
// CASCADE/SET NULL/SET DEFAULT, ON DELETE SET NULL/SET DEFAULT) sets on SQLite: to
// the referenced row's new value, to NULL, or to the column's default (red-team rt50d
// F1). Column names compare case-insensitively, as SQLite's.
func fencingCascade(from []string, t dialect.SideDoorTable) []string {
	var cols []string
	for _, c := range []string{t.TokenColumn, t.VersionColumn} {
		if c == "" {
			continue
		}
		for _, f := range from {
			if sameName(f, c) {
				cols = append(cols, c)
				break
			}
		}
	}
	return cols
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
		if len(r) < 3 || !dialect.Mentions(r[2], t.Table.Name) {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[1]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorView, Object: r[0] + " (trigger " + r[1] + ")",
			Problem: "the INSTEAD OF trigger " + r[1] + " of view " + r[0] + " writes " + t.Table.String() + ": a write to the view is not fenced by the wrapper (it matches table names); drop the trigger (or write through the table)",
			Fix:     []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

// TriggerDoors finds the doors a statement through the pool opens
// (dialect.TriggerDoorFinder), which schema.Check reports (through SideDoors) and the
// lazy check refuses: the views whose INSTEAD OF triggers write the table
// (viewTriggers, described at SideDoors), then the triggers of other tables that write
// it (otherTriggers), then the table's own triggers that may undo the fencing NULL or
// skip a guard's trigger (ownTriggers: a BEFORE trigger cannot assign NEW, but it can
// write the row itself and drop the original change with RAISE(IGNORE); a trigger of
// any timing made after the guards runs before the tombstone guard's AFTER triggers,
// and RAISE(IGNORE) abandons them), one query each; the guards' own triggers (guardTriggers), the triggers on or writing the guard
// tables (guardWriters), the guard tables' shape (guardTables). Last, a guard a table
// swap lost (lostGuard), the tombstone table's key (tombstoneKey), and the foreign keys
// whose ON DELETE CASCADE deletes the table's rows at their own token, or whose
// writing action sets a fencing column (cascades, described at SideDoors; red-team
// rt42a F3: a DELETE of a guarded parent through the pool tombstoned the child's rows
// below the deleting token, and the lazy check, which did not run this finder, let a
// stale holder re-insert them; rt50d F1: an ON UPDATE CASCADE of a key over the
// version column raised it with the referenced row's, and the guard accepted it), and
// the same ON DELETE CASCADE keys of other guarded tables that reference the table
// (referencingCascades, cascadedoor.go: the table's own DELETE through the pool is
// refused before it cascades, red-team rt49b F1).
func (d dialectImpl) TriggerDoors(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	return dialect.FindDoors(ctx, query, t, d.viewTriggers, d.otherTriggers, d.ownTriggers, d.guardTriggers, d.guardWriters, d.guardTables, d.lostGuard, d.tombstoneKey, d.cascades, d.referencingCascades)
}

// lostGuard finds a guard a table swap lost (dialect.SideDoorGuardLost), in one
// query over the schema's sqlite_master. The evidence that the table was guarded
// under its name: its tombstone table fencedsql_tomb_<table> (the twelve-step rebuild —
// CREATE TABLE new_accounts, copy, DROP TABLE accounts, ALTER TABLE new_accounts
// RENAME TO accounts — drops the table's triggers with it, and the tombstone table
// stays; UntombstoneDDL drops it), or a trigger of the guard (fencedsql_guard_<table>,
// fencedsql_floor_<table>) or of the tombstone guard (fencedsql_tombdel_/tombins_/
// tombkey_/tombrep_/tombmov_<table>) on another table (ALTER TABLE accounts RENAME TO accounts_old
// takes the triggers along; trigger names are unique in a schema, so such a trigger
// is not on the table). With the evidence, the table must carry
// fencedsql_guard_<table> (the guard), and fencedsql_tombins_<table> and
// fencedsql_tombdel_<table> (the tombstone guard). Not seen: a table guarded without
// the tombstone guard and rebuilt, which leaves nothing named for it. A table
// carrying fencedsql_guard_<table> without fencedsql_floor_<table> has lost the
// guard's floor part (dialect.GuardTriggers.FloorPartDoor, red-team rt34b F1). Fix:
// re-run fencedsql-schema -apply.
func (d dialectImpl) lostGuard(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	master := "sqlite_master"
	if t.Table.Schema != "" {
		master = d.QuoteIdent(t.Table.Schema) + ".sqlite_master"
	}
	name := t.Table.Name
	guard, floor := guardTrigger(name), floorTrigger(name)
	del, ins, key := tombObject("del", t.Table).Name, tombObject("ins", t.Table).Name, tombObject("key", t.Table).Name
	rep, mov := tombObject("rep", t.Table).Name, tombObject("mov", t.Table).Name
	tomb := tombObject("", t.Table)
	rows, err := query(ctx, "SELECT type, name, tbl_name FROM "+master+" WHERE type = 'table' AND name = ? COLLATE NOCASE "+
		"OR type = 'trigger' AND name COLLATE NOCASE IN (?, ?, ?, ?, ?, ?, ?) ORDER BY type, name", tomb.Name, guard, floor, del, ins, key, rep, mov)
	if err != nil {
		return nil, err
	}
	on := map[string]bool{}          // triggers named for the table that are on it
	elsewhere := map[string]string{} // … and those on another table: name → table
	tombTbl := false
	for _, r := range rows {
		if len(r) < 3 {
			continue
		}
		switch {
		case r[0] == "table":
			tombTbl = true
		case sameName(r[2], name):
			on[foldName(r[1])] = true
		default:
			elsewhere[foldName(r[1])] = r[2]
		}
	}
	g := dialect.GuardTriggers{On: on, Elsewhere: elsewhere, Fold: foldName}
	var doors []dialect.SideDoor
	if sd, ok := g.LostDoor(t.Table.String(), "the guard", []string{guard, floor}, []string{guard}, false, "", "", "a table swap (the twelve-step rebuild, a rename)"); ok {
		doors = append(doors, sd)
	}
	if sd, ok := g.FloorPartDoor(t.Table.String(), guard, floor); ok {
		doors = append(doors, sd)
	}
	if sd, ok := g.LostDoor(t.Table.String(), "the tombstone guard", []string{del, ins, key, rep, mov}, []string{ins, del}, tombTbl, "table "+tomb.String(), "its tombstone table "+tomb.String()+" exists", "a table swap (the twelve-step rebuild, a rename)"); ok {
		doors = append(doors, sd)
	}
	return doors, nil
}

// otherTriggers finds the triggers on other tables of the table's schema whose body
// (the text after BEGIN) writes the table (dialect.WritesTable: a statement of the
// body that writes and names it, in any quoting, also as a string): an INSERT,
// UPDATE or DELETE on the other table, through the fenced pool or not, runs the
// trigger, which writes the table unfenced. SQLite's guard lets through an UPDATE
// that advances the version and does not cover INSERT or DELETE, so nothing stops it.
// A trigger on another guarded table counts too: the statement on that table is
// fenced for its rows only (dialect.TriggerDoorFinder). Triggers on views are
// viewTriggers' (an INSTEAD OF trigger), triggers on the table itself ownTriggers',
// and TEMP triggers (of one connection) are not seen. Fix: drop the trigger (DROP
// TRIGGER), and do its work through the wrapper.
func (d dialectImpl) otherTriggers(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	master := "sqlite_master"
	if t.Table.Schema != "" {
		master = d.QuoteIdent(t.Table.Schema) + ".sqlite_master"
	}
	rows, err := query(ctx, "SELECT tr.tbl_name, tr.name, tr.sql FROM "+master+" tr JOIN "+master+" o ON o.type = 'table' AND o.name = tr.tbl_name COLLATE NOCASE "+
		"WHERE tr.type = 'trigger' AND tr.tbl_name <> ? COLLATE NOCASE ORDER BY tr.tbl_name, tr.name", t.Table.Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 3 || !triggerWrites(r[2], t.Table.Name) {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[1]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorTrigger, Object: r[1] + " on " + r[0],
			Problem: "the trigger " + r[1] + " on " + r[0] + " writes " + t.Table.String() + ": a write to " + r[0] +
				" (fenced, if at all, for " + r[0] + "'s rows only) changes rows of " + t.Table.String() + " without their fence, and SQLite's guard lets an UPDATE that advances the version, an INSERT and a DELETE through; drop the trigger and do its work through the wrapper",
			Fix: []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

var _ dialect.SideDoorFinder = dialectImpl{}
var _ dialect.TriggerDoorFinder = dialectImpl{}
