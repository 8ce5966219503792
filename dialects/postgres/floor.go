package postgres

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// FloorSQLState is the SQLSTATE of the guard's refusal of a write whose token is below
// the database's token floor (dialect.FloorTable), with a message starting
// "fencedsql: token floor on <schema>.<table>:". The fenced driver maps it to
// fencedsql.ErrBelowFloor.
//
// The guard function reads the floor on every guarded INSERT and on every UPDATE it
// accepts, from FloorTable in the schema that was the first of the search_path when
// the guard was installed (compiled into the function, which runs with a pinned
// search_path). An empty floor table, or none, means no floor.
const FloorSQLState = "FNCD2"

// FloorDDL creates the floor table with its one row (floor 0) when missing: readable by
// every role (the guard functions run as the writing role), written by its owner only.
func (dialectImpl) FloorDDL() []string {
	return []string{
		"CREATE TABLE IF NOT EXISTS " + dialect.FloorTable + " (id integer PRIMARY KEY CHECK (id = 1), floor bigint NOT NULL CHECK (floor >= 0))",
		"INSERT INTO " + dialect.FloorTable + " (id, floor) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
		"REVOKE ALL ON " + dialect.FloorTable + " FROM PUBLIC",
		"GRANT SELECT ON " + dialect.FloorTable + " TO PUBLIC",
	}
}

// RaiseFloorQuery sets the floor when it is lower.
func (dialectImpl) RaiseFloorQuery(floor int64) (string, []any) {
	return "UPDATE " + dialect.FloorTable + " SET floor = $1 WHERE id = 1 AND floor < $1", []any{floor}
}

var _ dialect.Floorer = dialectImpl{}
