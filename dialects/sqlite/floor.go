package sqlite

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// FloorMessagePrefix starts the message of the guard's refusal of a write whose token
// is below the token floor (dialect.FloorTable); the fenced driver maps it to
// fencedsql.ErrBelowFloor.
//
// The floor table lives in each schema (the main database, an attached one) that holds
// a guarded table: a trigger reads tables of its own schema. GuardDDL creates it there;
// RaiseTokenFloor raises it in the main database, when guard triggers there read it
// (GuardFloorsQuery); an attached database's floor only through a connection whose
// main database is that file. A table of an attached database registered in main is
// therefore named by the main database's raise and TokenFloor
// (schema.ErrFloorUncovered: its guard reads a floor they do not raise, red-team
// rt37c F3), never taken for covered. The guard's BEFORE UPDATE trigger reads it for
// every UPDATE it would otherwise accept, a second trigger, fencedsql_floor_<table>,
// BEFORE INSERT, for every INSERT. A floor table that has lost its row refuses every
// write until RaiseTokenFloor writes it back (schema.Check and TokenFloor report it:
// ErrFloorLost).
const FloorMessagePrefix = "fencedsql: token floor on "

func floorTable(schema string) dialect.TableName {
	return dialect.TableName{Schema: schema, Name: dialect.FloorTable}
}

func (d dialectImpl) floorDDL(schema string) []string {
	t := floorTable(schema).Quote(d.QuoteIdent)
	return []string{
		"CREATE TABLE IF NOT EXISTS " + t + " (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), floor INTEGER NOT NULL CHECK (floor >= 0))",
		// The row only where no guard reads the floor yet: a row lost under guards stays
		// lost (every write refused, ErrFloorLost reported) until a raise writes it back
		// at the lock service's token (red-team rt25a F1).
		"INSERT OR IGNORE INTO " + t + " (id, floor) SELECT 1, 0 WHERE NOT EXISTS (SELECT 1 FROM " + d.master(schema) + " WHERE type = 'trigger' AND sql LIKE '%FROM " + dialect.FloorTable + " f WHERE%')",
	}
}

// FloorDDL creates the floor table in the main database.
func (d dialectImpl) FloorDDL() []string { return d.floorDDL("") }

// RaiseFloorQuery sets table's floor when it is lower (writing the row when missing).
func (d dialectImpl) RaiseFloorQuery(table dialect.TableName, floor int64) (string, []any) {
	return "INSERT INTO " + table.Quote(d.QuoteIdent) + " (id, floor) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET floor = max(floor, excluded.floor)", []any{floor}
}

// GuardFloorsQuery yields the main database when guard triggers there (the BEFORE
// UPDATE guard, the BEFORE INSERT floor trigger) read its floor table: a trigger reads
// tables of its own schema. Attached databases are not listed. The floor tools may
// read and write it (third and fourth columns) only while it is as the guards create
// it and carries no trigger (floorSafe), else they fail with ErrFloorUnsafe: a floor
// column of TEXT affinity keeps '9' over a raise to 100 (red-team rt27c F2).
func (d dialectImpl) GuardFloorsQuery() (string, []any) {
	safe := d.floorSafe("main")
	return "SELECT 'main', 1, " + safe + ", " + safe + " FROM main.sqlite_master WHERE type = 'trigger' AND (name LIKE ? OR name LIKE ?) AND sql LIKE ? LIMIT 1",
		[]any{"fencedsql_guard_%", "fencedsql_floor_%", "%FROM " + dialect.FloorTable + " f WHERE%"}
}

func floorTrigger(name string) string { return "fencedsql_floor_" + name }

// floorBelow is the condition "the new row's token is below the floor".
func floorBelow(tok string) string {
	// NOT COALESCE(>=, 0): a floor table without its row refuses every write until a
	// raise writes it back, instead of reading as no floor (red-team rt24c F1, F5).
	return "NOT COALESCE(NEW." + tok + " >= (SELECT f.floor FROM " + dialect.FloorTable + " f WHERE f.id = 1), 0)"
}

func floorRefusal(table string) string {
	return "RAISE(ABORT, " + literal(FloorMessagePrefix+table+": token below the floor") + ")"
}

var (
	_ dialect.Floorer     = dialectImpl{}
	_ dialect.FloorFinder = dialectImpl{}
)
