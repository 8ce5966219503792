package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The guards' own tables — a table's tombstone table fencedsql_tomb_<table> and the
// token floor fencedsql_floor of its database — are created by CREATE TABLE IF NOT
// EXISTS, which keeps whatever is there, and MySQL/MariaDB keep no dependency of the
// guard triggers on them: a migration or their owner may change them under intact
// triggers (red-team rt27c). The guards need each as they created it:
//
//   - a base table (a view of that name runs another account's code, and may read or
//     write anything), not system-versioned (MariaDB: a session's
//     system_versioning_asof reads it as of that time: guardversioned.go);
//   - its token column (fence_token, floor) BIGINT NOT NULL, signed: a FLOAT keeps
//     16777217 as 16777216, so a tombstone or a floor raised to a token holds the one
//     below it, and a stale holder of that token writes again (F1, F2); a string
//     column compares '60' above '100';
//   - no foreign key: InnoDB's cascades fire no triggers and check no privilege on the
//     child, so ON DELETE CASCADE from an ordinary parent erases tombstones, and ON
//     UPDATE CASCADE lowers the floor, by a write the application role may send
//     through the fenced pool to that parent (F3, F4) — and the guards need none;
//   - no trigger: the guards put none there, and one that rewrites NEW.fence_token or
//     NEW.floor (SET NEW.floor = OLD.floor) keeps every tombstone or raise lower than
//     written (F5).
//
// guardTableSafe is that condition, in SQL, on the table named name (an SQL
// expression) of the database db (an SQL expression) whose token column is column (an
// SQL expression), the expressions qualified by their own aliases (the subqueries'
// aliases are gt, gc, gf, gg). It is the one test of a guard table: the floor tools
// read and raise only floor tables it accepts (GuardFloorsQuery: ErrFloorUnsafe for
// another), and guardTables reports a table it refuses as a door
// (dialect.SideDoorGuardTable), which schema.Check reports with the statements that
// restore it and the lazy check refuses. information_schema shows an account only the
// objects it holds a right on: an account that cannot see a trigger or a foreign key
// of the table takes it for absent (the raise reads its floor back, which a trigger
// that altered the write fails), and one that cannot see the column's type takes the
// table for unsafe.
func guardTableSafe(db, name, column string) string {
	return "EXISTS (SELECT 1 FROM information_schema.TABLES gt WHERE gt.TABLE_SCHEMA = " + db + correlatedDatabase("gt.TABLE_SCHEMA", db) + " AND gt.TABLE_NAME = " + name + " AND gt.TABLE_TYPE = 'BASE TABLE')" +
		" AND " + guardColumnSafe(db, name, column) +
		" AND NOT EXISTS (SELECT 1 FROM information_schema.REFERENTIAL_CONSTRAINTS gf WHERE gf.CONSTRAINT_SCHEMA = " + db + correlatedDatabase("gf.CONSTRAINT_SCHEMA", db) + " AND gf.TABLE_NAME = " + name + ")" +
		" AND NOT EXISTS (SELECT 1 FROM information_schema.TRIGGERS gg WHERE gg.EVENT_OBJECT_SCHEMA = " + db + correlatedDatabase("gg.EVENT_OBJECT_SCHEMA", db) + " AND gg.EVENT_OBJECT_TABLE = " + name + ")"
}

// guardColumnSafe is guardTableSafe's test of the token column: BIGINT, signed, NOT
// NULL (a generated column is nullable in MariaDB).
func guardColumnSafe(db, name, column string) string {
	return "EXISTS (SELECT 1 FROM information_schema.COLUMNS gc WHERE gc.TABLE_SCHEMA = " + db + correlatedDatabase("gc.TABLE_SCHEMA", db) + " AND gc.TABLE_NAME = " + name + " AND gc.COLUMN_NAME = " + column +
		" AND gc.DATA_TYPE = 'bigint' AND gc.COLUMN_TYPE NOT LIKE '%unsigned%' AND gc.IS_NULLABLE = 'NO' AND gc.GENERATION_EXPRESSION IS NULL)"
}

// tombClockColumnSafe reports whether typ, the tombstone table's deleted_at as
// guardTables' 'column' rows show it (COLUMN_TYPE, then " NULL" when nullable and
// " GENERATED" when generated), is the column TombstoneDDL creates: DATETIME(6) NOT
// NULL (red-team rt46b F3). The guards date a tombstone by tombClock, in UTC to the
// microsecond, and PurgeTombstones removes those dated before its clock less the
// retention: a DATE, a DATETIME or TIME of fewer digits, a YEAR or a string column
// dates it earlier (a DATE at midnight: purged at once by a one-hour retention), and
// a TIMESTAMP converts it by the writing session's time zone, which the application
// may set — a tombstone purged early lets a stale holder re-create its key. A column
// the account cannot see ("") is taken for unsafe, as guardColumnSafe takes the token
// column.
func tombClockColumnSafe(typ string) bool { return typ == "datetime(6)" }

// guardTables finds the doors of the guards' own tables of t.Table — its tombstone
// table and the token floor of its database — and of the triggers that write them, in
// one query (the lazy check runs it once per table and pool):
//
//   - a guard table (that the account sees) that guardTableSafe refuses
//     (dialect.SideDoorGuardTable). Fix: MODIFY the token column back to BIGINT NOT
//     NULL (the values a FLOAT rounded stay rounded: raise the floor again, and treat
//     tombstones as possibly one below their token), DROP FOREIGN KEY, DROP TRIGGER,
//     DROP SYSTEM VERSIONING (guardversioned.go: it keeps the rows); none for a view
//     of that name (drop it and re-run fencedsql-schema -apply);
//   - a trigger on any other table, in the table's database (or one naming it), whose
//     body may write the tombstone table or the floor (bodyWrites, the rule of
//     routines and events; a trigger can run neither DDL nor dynamic SQL): it runs
//     as its DEFINER, who may write them, whenever the application writes its table,
//     through the fenced pool too, so it lends the right to erase tombstones or lower
//     the floor to every account that may write that table (F7;
//     dialect.SideDoorGuardWriter). The tombstone guard's own triggers for the table
//     (fencedsql_tombdel_ and _tombkey_<table>) write the tombstone table: their
//     bodies are guardTriggers' to judge, and on another table lostGuard's. Fix: DROP
//     TRIGGER. A trigger that calls a routine writing them is not seen;
//   - a scheduled event whose body may write the tombstone table, the floor or the
//     table itself (eventdoor.go, red-team rt46b F2).
func (d dialectImpl) guardTables(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	const db = "COALESCE(NULLIF(?, _binary''), DATABASE())"
	tomb, floor := tombTable(t.Table), floorTable(t.Table.Schema)
	// Every condition on constants (the database and the names as parameters), none
	// correlated: MariaDB then opens only the tables named instead of scanning the
	// catalog of every database (a correlated COLUMNS subquery took 80 ms).
	safe := func(column string) string {
		return "IF(" + guardTableSafe(db, "?", "'"+column+"'") + ", 1, 0), IF(" + guardColumnSafe(db, "?", "'"+column+"'") + ", 1, 0)"
	}
	safeArgs := func(name string) []any {
		return []any{t.Table.Schema, name, t.Table.Schema, name, t.Table.Schema, name, t.Table.Schema, name, t.Table.Schema, name}
	}
	args := append([]any{}, safeArgs(tomb.Name)...)
	args = append(args, safeArgs(floor.Name)...)
	args = append(args, t.Table.Schema, tomb.Name, floor.Name, // tables
		t.Table.Schema, tomb.Name, floor.Name, // columns
		t.Table.Schema, tomb.Name, floor.Name, // foreign keys
		t.Table.Schema, tomb.Name, floor.Name, tomb.Name, floor.Name, t.Table.Schema, t.Table.Schema) // triggers
	rows, err := query(ctx, "SELECT 'safe', 'fence_token', "+safe("fence_token")+", '', '', '' "+
		"UNION ALL SELECT 'safe', 'floor', "+safe("floor")+", '', '', '' "+
		"UNION ALL SELECT 'table', TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, '', '', '' FROM information_schema.TABLES WHERE TABLE_SCHEMA = "+db+" AND TABLE_NAME IN (?, ?) "+
		"UNION ALL SELECT 'column', TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, CONCAT(COLUMN_TYPE, IF(IS_NULLABLE = 'YES', ' NULL', ''), IF(GENERATION_EXPRESSION IS NULL, '', ' GENERATED')), '', '' "+
		"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "+db+" AND TABLE_NAME IN (?, ?) AND COLUMN_NAME IN ('fence_token', 'floor', 'deleted_at') "+
		"UNION ALL SELECT 'fk', CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, REFERENCED_TABLE_NAME, '', '' FROM information_schema.REFERENTIAL_CONSTRAINTS "+
		"WHERE CONSTRAINT_SCHEMA = "+db+" AND "+exactDatabase("CONSTRAINT_SCHEMA", t.Table.Schema)+" AND TABLE_NAME IN (?, ?) "+
		"UNION ALL SELECT 'trigger', TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, ACTION_STATEMENT, SQL_MODE FROM information_schema.TRIGGERS "+
		"WHERE EVENT_OBJECT_SCHEMA = "+db+" AND "+exactDatabase("EVENT_OBJECT_SCHEMA", t.Table.Schema)+" AND EVENT_OBJECT_TABLE IN (?, ?) "+
		"OR (LOCATE(LOWER(?), LOWER(ACTION_STATEMENT)) > 0 OR LOCATE(LOWER(?), LOWER(ACTION_STATEMENT)) > 0) "+
		// A trigger's unqualified names are its own database's (otherTriggers).
		"AND (TRIGGER_SCHEMA = "+db+" AND "+exactDatabase("TRIGGER_SCHEMA", t.Table.Schema)+" OR LOCATE(LOWER("+db+"), LOWER(ACTION_STATEMENT)) > 0 AND "+exactMention("ACTION_STATEMENT", t.Table.Schema)+") "+
		"UNION ALL "+eventsSQL(t.Table.Schema),
		append(args, eventsArgs(t.Table)...)...)
	if err != nil {
		return nil, err
	}
	// The verdicts (guardTableSafe, guardColumnSafe) by token column, and the tables
	// and their token columns' types as the account sees them.
	verdict := map[string][2]bool{}
	types := map[string]string{}
	clock := "" // the tombstone table's deleted_at, as the 'column' rows show it
	for _, r := range rows {
		if len(r) < 7 {
			continue
		}
		switch r[0] {
		case "safe":
			verdict[r[1]] = [2]bool{dialect.CatalogBool(r[2]), dialect.CatalogBool(r[3])}
		case "column":
			if strings.EqualFold(r[3], "deleted_at") {
				if strings.EqualFold(r[2], tomb.Name) {
					clock = r[4]
				}
				continue
			}
			if strings.EqualFold(r[2], floor.Name) == strings.EqualFold(r[3], "floor") {
				types[strings.ToLower(r[2])] = r[4]
			}
		}
	}
	tables := map[string]*guardTable{}
	var order []*guardTable
	for _, r := range rows {
		if len(r) < 7 || r[0] != "table" {
			continue
		}
		g := &guardTable{name: dialect.TableName{Schema: r[1], Name: r[2]}, base: baseTableType(r[3]), versioned: r[3] == versionedTableType, typ: types[strings.ToLower(r[2])]}
		g.what, g.column = "the tombstone table "+g.name.String(), "fence_token"
		if strings.EqualFold(r[2], floor.Name) {
			g.what, g.column = "the token floor "+g.name.String(), "floor"
		}
		v := verdict[g.column]
		g.safe, g.columnOK = v[0], v[1]
		if g.column == "fence_token" {
			g.clock, g.clockOK = clock, tombClockColumnSafe(clock)
			g.safe = g.safe && g.clockOK
		}
		tables[strings.ToLower(r[2])] = g
		order = append(order, g)
	}
	var writers []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 7 {
			continue
		}
		switch r[0] {
		case "event":
			if door := d.eventDoor(t.Table, r); door != nil {
				writers = append(writers, *door)
			}
		case "fk":
			if g := tables[strings.ToLower(r[2])]; g != nil && strings.EqualFold(r[1], g.name.Schema) {
				g.found = append(g.found, "the foreign key "+r[3]+" (REFERENCES "+r[4]+": InnoDB's cascades fire no trigger and need no right on "+g.name.String()+")")
				g.fix = append(g.fix, "ALTER TABLE "+g.name.Quote(d.QuoteIdent)+" DROP FOREIGN KEY "+d.QuoteIdent(r[3]))
			}
		case "trigger":
			trg := dialect.TableName{Schema: r[1], Name: r[2]}
			on := dialect.TableName{Schema: r[3], Name: r[4]}
			if g := tables[strings.ToLower(r[4])]; g != nil && strings.EqualFold(r[3], g.name.Schema) {
				g.found = append(g.found, "the trigger "+trg.String())
				g.fix = append(g.fix, "DROP TRIGGER IF EXISTS "+trg.Quote(d.QuoteIdent))
				continue
			}
			if name, _, own := guardTriggerTable(r[2], t.Table.Name); own && strings.EqualFold(name, t.Table.Name) {
				continue // the guards' own names for the table: guardTriggers', or lostGuard's on another table
			}
			var wrote []string
			for _, g := range []string{tomb.Name, floor.Name} {
				if writesAsStored(r[5], storedMode(r, 6), g, true) {
					wrote = append(wrote, g)
				}
			}
			if len(wrote) == 0 {
				continue
			}
			writers = append(writers, dialect.SideDoor{Kind: dialect.SideDoorGuardWriter, Object: trg.String() + " on " + on.String(),
				Problem: "the trigger " + trg.String() + " on " + on.String() + " may write " + strings.Join(wrote, " and ") + ", which the guards of " + t.Table.String() +
					" read: it runs as its DEFINER whenever " + on.String() + " is written, through the fenced pool too, and a tombstone deleted or a floor lowered lets a stale holder write again; drop the trigger",
				Fix: []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
		}
	}
	var doors []dialect.SideDoor
	for _, g := range order {
		if g.safe {
			continue
		}
		var wrong []string
		var fix []string
		if g.versioned {
			wrong = append(wrong, versionedGuardProblem(g))
			fix = append(fix, versionedGuardFix(g, d.QuoteIdent))
		}
		switch {
		case !g.base:
			wrong = append(wrong, "it is not a base table (a view of that name)")
		case !g.columnOK:
			wrong = append(wrong, "its column "+g.column+" is "+orNone(g.typ)+", not BIGINT NOT NULL (a FLOAT keeps 16777217 as 16777216, a string compares '60' above '100')")
			if g.typ != "" {
				fix = append(fix, "ALTER TABLE "+g.name.Quote(d.QuoteIdent)+" MODIFY "+d.QuoteIdent(g.column)+" BIGINT NOT NULL")
			}
		}
		if g.base && g.column == "fence_token" && !g.clockOK {
			wrong = append(wrong, "its column deleted_at is "+orNone(g.clock)+", not DATETIME(6) NOT NULL (a DATE, a DATETIME of fewer digits or a string dates a tombstone earlier than written, and PurgeTombstones then removes fresh ones; a TIMESTAMP reads in the writing session's time zone)")
			if g.clock != "" {
				fix = append(fix, "ALTER TABLE "+g.name.Quote(d.QuoteIdent)+" MODIFY deleted_at DATETIME(6) NOT NULL")
			}
		}
		wrong = append(wrong, g.found...)
		fix = append(fix, g.fix...)
		if len(wrong) == 0 {
			// The condition refused it, but no row says why (an object that changed
			// between the subqueries): still a door.
			wrong = append(wrong, "it is not as the guards created it")
		}
		door := dialect.SideDoor{Kind: dialect.SideDoorGuardTable, Object: g.name.String(),
			Problem: g.what + ", which the guards of " + t.Table.String() + " read, is not as they created it: " + strings.Join(wrong, "; ") +
				"; a tombstone or floor kept lower than written lets a stale holder write again"}
		if !g.base {
			door.Problem += "; drop it and re-run fencedsql-schema -apply"
		} else {
			door.Fix = fix
			if !g.clockOK {
				door.Problem += "; the tombstones dated meanwhile keep their early date (purge with a retention that covers the time since the change)"
			}
			if !g.columnOK {
				door.Problem += "; the fix converts the column (values it rounded stay rounded: raise the floor again with RaiseTokenFloor at the lock service's LastToken + 1)"
			}
		}
		doors = append(doors, door)
	}
	return append(doors, writers...), nil
}

// guardTable is what guardTables learnt of one guard table.
type guardTable struct {
	name                 dialect.TableName
	what, column, typ    string
	clock                string // the tombstone table's deleted_at as the catalog shows it
	base, safe, columnOK bool
	versioned            bool // MariaDB's TABLE_TYPE 'SYSTEM VERSIONED' (base is set too)
	clockOK              bool
	found, fix           []string
}
