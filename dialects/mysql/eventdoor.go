package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// eventsSQL lists the scheduled events (information_schema.EVENTS) whose body may write
// the table, its tombstone table or the token floor of its database (red-team rt46b
// F2). An event runs its body as its DEFINER on its own schedule, outside every pool:
// one that deletes tombstones or lowers their tokens (DELETE FROM fencedsql_tomb_<table>,
// UPDATE … SET fence_token = 0) lets a stale holder re-create a deleted key, one that
// lowers the floor (UPDATE fencedsql_floor SET floor = 0) lets a stale token write
// again, and one that writes the table itself writes it unfenced — the bodies a stored
// routine or a trigger is reported for (routines, guardTables). They are judged the
// same way (bodyWrites over EVENT_DEFINITION: DDL on the guard tables and dynamic SQL
// count, red-team rt47b F1, F2), in the table's database or in another whose body
// names that database (an event's unqualified names are its own database's); the query
// also lists the events whose body holds PREPARE or EXECUTE, whose dynamic SQL may
// name nothing. A DISABLED event counts as much as an ENABLED one: ALTER EVENT … ENABLE,
// a replica promoted (SLAVESIDE_DISABLED) or the event scheduler turned on makes it
// run, with no change the guards could see. Writers of the guards' tables are
// dialect.SideDoorGuardWriter (Fix: DROP EVENT); writers of the table are
// dialect.SideDoorRoutine (no Fix: the event is the user's; do its work through the
// wrapper). information_schema lists an event only to an account with the EVENT
// privilege on its database: an account without it sees no event (schema.Check, run by
// the migration account, is the check that counts).
//
// guardTables reads the events with its own catalog query (eventsSQL's rows, tagged
// 'event': no round trip of their own) and judges each with eventDoor.
func eventsSQL(schema string) string {
	return "SELECT 'event', EVENT_SCHEMA, EVENT_NAME, STATUS, '', EVENT_DEFINITION, SQL_MODE FROM information_schema.EVENTS " +
		"WHERE (LOCATE(LOWER(?), LOWER(EVENT_DEFINITION)) > 0 OR LOCATE(LOWER(?), LOWER(EVENT_DEFINITION)) > 0 OR LOCATE(LOWER(?), LOWER(EVENT_DEFINITION)) > 0 " +
		"OR LOCATE('prepare', LOWER(EVENT_DEFINITION)) > 0 OR LOCATE('execute', LOWER(EVENT_DEFINITION)) > 0) " +
		"AND (EVENT_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("EVENT_SCHEMA", schema) +
		" OR LOCATE(LOWER(COALESCE(NULLIF(?, _binary''), DATABASE())), LOWER(EVENT_DEFINITION)) > 0 AND " + exactMention("EVENT_DEFINITION", schema) + ")"
}

// eventsArgs are eventsSQL's arguments for t.
func eventsArgs(t dialect.TableName) []any {
	return []any{t.Name, tombTable(t).Name, floorTable(t.Schema).Name, t.Schema, t.Schema}
}

// eventDoor judges the event of the eventsSQL row r (tag, schema, name, status, ”,
// definition, sql_mode): the door it is to table, or nil.
func (d dialectImpl) eventDoor(table dialect.TableName, r []string) *dialect.SideDoor {
	tomb, floor := tombTable(table), floorTable(table.Schema)
	ev := dialect.TableName{Schema: r[1], Name: r[2]}
	status, def := strings.ToLower(r[3]), r[5]
	var wrote []string
	for _, g := range []string{tomb.Name, floor.Name} {
		if writesAsStored(def, storedMode(r, 6), g, true) {
			wrote = append(wrote, g)
		}
	}
	if len(wrote) > 0 {
		return &dialect.SideDoor{Kind: dialect.SideDoorGuardWriter, Object: "event " + ev.String(),
			Problem: "the event " + ev.String() + " (" + status + ")" + dynamicUnreadNote(def) + " may write " + strings.Join(wrote, " and ") + ", which the guards of " + table.String() +
				" read: it runs as its DEFINER on its schedule (a disabled one once enabled), and a tombstone deleted or lowered, or a floor lowered, lets a stale holder write again; drop the event (or remove the write from its body)",
			Fix: []string{"DROP EVENT IF EXISTS " + ev.Quote(d.QuoteIdent)}}
	}
	if !writesAsStored(def, storedMode(r, 6), table.Name, false) {
		return nil
	}
	return &dialect.SideDoor{Kind: dialect.SideDoorRoutine, Object: "event " + ev.String(),
		Problem: "the event " + ev.String() + " (" + status + ")" + dynamicUnreadNote(def) + " writes " + table.String() + ": it runs as its DEFINER on its schedule (a disabled one once enabled), outside every pool, so its write is unfenced; the database-side guard lets an UPDATE that advances the version, an INSERT and a DELETE through. Drop the event (or remove the write from its body) and do its work through the wrapper: while it exists, guarded writes to " + table.String() + " are refused"}
}
