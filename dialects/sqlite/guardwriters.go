package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// guardWriters finds the triggers of the table's schema on the table's tombstone table
// or the token floor, and those on any table or view whose body may write one of them
// (triggerWrites: a statement that writes and names it):
// SQLite has no privileges, so a trigger that deletes the key's tombstone before the
// tombstone guard's AFTER INSERT check reads it (or one that lowers the floor) lets a
// stale write through the pool while every guard trigger is as installed (red-team
// rt24a F4). Triggers of the guards' names for the table are not judged here: on the
// table guardTriggers compares them whole, on another table they are the evidence of a
// lost guard (lostGuard), whose Fix re-creates them on the table. Fix: drop the trigger.
func (d dialectImpl) guardWriters(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" {
		return nil, nil
	}
	rows, err := query(ctx, "SELECT name, tbl_name, sql FROM "+d.master(t.Table.Schema)+" WHERE type = 'trigger' ORDER BY name")
	if err != nil {
		return nil, err
	}
	tomb := tombObject("", dialect.TableName{Name: t.Table.Name}).Name
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 3 {
			continue
		}
		if name, _, own := guardTriggerTable(r[0]); own && sameName(name, t.Table.Name) {
			continue // the guards' own names for the table: guardTriggers', or lostGuard's on another table
		}
		var wrote []string
		for _, g := range []string{tomb, dialect.FloorTable} {
			// A trigger on the object itself (its body may drop the write with
			// RAISE(IGNORE)), or a body that writes it.
			if sameName(r[1], g) || triggerWrites(r[2], g) {
				wrote = append(wrote, g)
			}
		}
		if len(wrote) == 0 {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[0]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorGuardWriter, Object: r[0] + " on " + r[1],
			Problem: "the trigger " + r[0] + " on " + r[1] + " may write " + strings.Join(wrote, " and ") + ", which the guards of " + t.Table.String() +
				" read: a tombstone deleted or a floor lowered lets a stale holder write again; drop the trigger",
			Fix: []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}
