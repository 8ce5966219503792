package dialect

// FloorTable is the token floor: one row (id = 1, floor), in the database's default
// schema (PostgreSQL: the first schema of the search_path when the guards were
// installed; MySQL: each database that holds a guarded table, next to its triggers;
// SQLite: each schema that holds a guarded table). The guards create it; only its
// owner writes it, and the fenced driver refuses statements that name it.
const FloorTable = "fencedsql_floor"

// Floorer is implemented by dialects whose guards enforce the token floor.
type Floorer interface {
	// FloorDDL returns the statements that create FloorTable with its one row (floor 0)
	// when missing. GuardDDL includes them.
	FloorDDL() []string
	// RaiseFloorQuery returns the statement that sets the floor to floor when it is
	// lower (never lowers it).
	RaiseFloorQuery(floor int64) (query string, args []any)
}
