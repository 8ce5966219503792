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
// RaiseTokenFloor raises it in the main database. The guard's BEFORE UPDATE trigger
// reads it for every UPDATE it would otherwise accept, a second trigger,
// fencedsql_floor_<table>, BEFORE INSERT, for every INSERT. An empty floor table means no
// floor.
const FloorMessagePrefix = "fencedsql: token floor on "

func floorTable(schema string) dialect.TableName {
	return dialect.TableName{Schema: schema, Name: dialect.FloorTable}
}

func (d dialectImpl) floorDDL(schema string) []string {
	t := floorTable(schema).Quote(d.QuoteIdent)
	return []string{
		"CREATE TABLE IF NOT EXISTS " + t + " (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1), floor INTEGER NOT NULL CHECK (floor >= 0))",
		"INSERT OR IGNORE INTO " + t + " (id, floor) VALUES (1, 0)",
	}
}

// FloorDDL creates the floor table in the main database.
func (d dialectImpl) FloorDDL() []string { return d.floorDDL("") }

// RaiseFloorQuery sets the floor when it is lower.
func (dialectImpl) RaiseFloorQuery(floor int64) (string, []any) {
	return "UPDATE " + dialect.FloorTable + " SET floor = ? WHERE id = 1 AND floor < ?", []any{floor, floor}
}

func floorTrigger(name string) string { return "fencedsql_floor_" + name }

// floorBelow is the condition "the new row's token is below the floor".
func floorBelow(tok string) string {
	return "NEW." + tok + " < (SELECT f.floor FROM " + dialect.FloorTable + " f WHERE f.id = 1)"
}

func floorRefusal(table string) string {
	return "RAISE(ABORT, " + literal(FloorMessagePrefix+table+": token below the floor") + ")"
}

var _ dialect.Floorer = dialectImpl{}
