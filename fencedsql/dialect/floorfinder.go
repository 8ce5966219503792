package dialect

// FloorFinder is implemented by Floorers that can tell which floor tables the installed
// guards read. A guard reads the floor table it was installed with, not the one a later
// connection would find by its default schema: PostgreSQL's guard functions name the
// floor with the schema that was first on the installer's search_path; a MySQL/MariaDB
// or SQLite trigger reads the floor table of its own database (schema). Raising any
// other floor table refuses nothing, so schema.RaiseTokenFloor and TokenFloor raise and
// read the tables this query lists: those in scope, and those out of scope whose
// schema a table of the connection's registry is qualified with (MySQL/MariaDB: a
// registered table of another database, whose guards read that database's floor).
type FloorFinder interface {
	// GuardFloorsQuery returns the query that lists the floor tables installed guards
	// read, one row per table: the schema that holds it (PostgreSQL: the schema;
	// MySQL/MariaDB: the database; SQLite: "main"), unquoted, and 1 when the table is in
	// the scope of the connection, 0 when it is not. The scope: PostgreSQL, every schema
	// of the connection's database; MySQL/MariaDB, the connection's database, or every
	// database whose guard triggers the account can see (information_schema shows a
	// trigger only to an account with a right on its table) when the connection names
	// none; SQLite, the main database (attached databases are not listed). A guard of an
	// older version that reads no floor is not listed. A dialect may add two columns:
	// 1 when the floor tools may read the table as the running role (no other role's
	// code runs then), and 1 when they may write it (the role owns it); the tools
	// refuse a table that is not, rather than skip it.
	GuardFloorsQuery() (query string, args []any)
}

// FloorCoverageFinder is implemented by dialects in which a guarded table's rows may
// live in tables its guard's triggers do not fire for (PostgreSQL: inheritance
// children, whose rows a parent's row triggers never judge, and partitions whose
// cloned trigger was disabled), or whose guard's installation the session's default
// schema decides (PostgreSQL's GuardInstalledQuery looks the floor's copy up on the
// search_path). schema.RaiseTokenFloor and TokenFloor(s) use it to name the tables
// whose writes the floor does not hold (schema.ErrFloorUncovered); a dialect without
// it is judged by Guarder.GuardInstalledQuery on each guarded table.
type FloorCoverageFinder interface {
	// UnflooredQuery returns a query yielding one row (schema, name) per table among
	// table (for an unqualified name, every table of that name, as a guard names them)
	// and its descendants at every level that exists and carries no enabled row
	// trigger of the guard whose function reads a token floor: the tables whose
	// INSERTs and UPDATEs no floor refuses.
	UnflooredQuery(table TableName) (query string, args []any)
}
