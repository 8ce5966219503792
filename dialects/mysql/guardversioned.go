package mysql

// A system-versioned guard table (red-team rt50b F2). MariaDB lists a table WITH
// SYSTEM VERSIONING as TABLE_TYPE 'SYSTEM VERSIONED', not 'BASE TABLE'. It is a base
// table all the same, and its rows are the guards' own: a tombstone table or a token
// floor that a migration versioned (ALTER TABLE … ADD SYSTEM VERSIONING, an audit
// policy versioning every table) keeps its tombstones and its floor. But every SELECT
// of it that does not name FOR SYSTEM_TIME — the guards' reads of the tombstones and
// the floor, the floor tools' — reads it as of the session's system_versioning_asof:
// a session with it set reads the tombstones and the floor of that time, without the
// tombstone of a key deleted since, below a raise made since. So guardTableSafe
// refuses it (the floor tools fail with ErrFloorUnsafe, the lazy check refuses the
// pool's guarded writes, schema.Check reports it) and guardTables reports it as what
// it is: versioned, with the Fix ALTER TABLE … DROP SYSTEM VERSIONING, which keeps the
// current rows (the tombstones, the floor) and drops only their history — never "a
// view: drop it", which would erase the tombstones (a deleted key then comes back
// under an older token) or the floor. The tombstone key check (tombstoneKey) leaves a
// versioned tombstone table to this report: MariaDB adds its row_end column to a
// versioned table's primary key, which is no change of the table's key.

// versionedTableType is the TABLE_TYPE of a system-versioned table (MariaDB).
const versionedTableType = "SYSTEM VERSIONED"

// baseTableType reports whether typ, a TABLE_TYPE of information_schema.TABLES, is a
// base table: 'BASE TABLE', or MariaDB's 'SYSTEM VERSIONED' (a view is 'VIEW', a
// sequence 'SEQUENCE', a temporary table 'TEMPORARY').
func baseTableType(typ string) bool { return typ == "BASE TABLE" || typ == versionedTableType }

// versionedGuardProblem says why the system-versioned guard table g is refused.
func versionedGuardProblem(g *guardTable) string {
	return "it is system-versioned (a session's system_versioning_asof would make the guards and the floor tools read " +
		g.what + " as of that time: tombstones recorded since missing, a floor raised since lower)"
}

// versionedGuardFix is the statement that makes g a plain table again: it keeps the
// current rows and drops their history. A table versioned with period columns of its
// own (… GENERATED ALWAYS AS ROW START/END, PERIOD FOR SYSTEM_TIME) needs them dropped
// in the same ALTER TABLE; the server then names them in its error.
func versionedGuardFix(g *guardTable, quote func(string) string) string {
	return "ALTER TABLE " + g.name.Quote(quote) + " DROP SYSTEM VERSIONING"
}
