package dialect

// SchemaTokenLister is implemented by a dialect whose guarded tables can live in a
// schema (MySQL/MariaDB: a database) other than the connection's, outside the scope
// that TombstoneLister and FloorFinder list: schema.MaxToken then reads, for a table
// named with such a qualifier, that schema's own floor table (FloorTable) and
// tombstone tables, whose tokens its guards hold to (red-team rt31b F4).
type SchemaTokenLister interface {
	// TombstoneTablesInQuery returns a query listing the tombstone tables of schema,
	// one row each: (schema, table name).
	TombstoneTablesInQuery(schema string) (query string, args []any)
}

// TokenTableResolver is implemented by a dialect where a guarded table's name can name
// tables that the connection's own name resolution does not reach (PostgreSQL: a table
// of the name in every schema, the search_path choosing only one — and a guard matches
// its name in every schema). schema.MaxToken then reads each table the query lists by
// its exact catalog identity, never through the search_path (red-team rt40c F1: two
// schemas' accounts, case twins, a "$user" schema's table shadowing public's).
type TokenTableResolver interface {
	// TokenTablesQuery returns a query listing, one row each (schema, table, column:
	// exact catalog names), every table that table can name — for an unqualified name
	// one in each schema; each part matched as written and as the server folds it — and
	// that has a column tokenCol can name. Listing too many is safe (MaxToken reads
	// more); a table the name reaches that is left out is not.
	TokenTablesQuery(table TableName, tokenCol string) (query string, args []any)
}

// UnfilteredReader is implemented by a dialect whose row-level security can hide rows
// from schema.MaxToken's reads (PostgreSQL). UnfilteredReadStatements run first in
// MaxToken's read-only transaction and make a read that a policy would filter fail
// instead (red-team rt40c F2); RowFiltered reports whether err is that failure.
type UnfilteredReader interface {
	UnfilteredReadStatements() []string
	RowFiltered(err error) bool
}

// PastReader is implemented by a dialect whose session settings can make a plain
// SELECT read a table as it was at an earlier time (MariaDB: system_versioning_asof
// reads every system-versioned table as of that time). schema.MaxToken runs
// PastReadQuery first in its read-only transaction and refuses a session that
// PastRead says reads the past (red-team rt50b F4): the MAX of the rows of then is
// below the tokens written since.
type PastReader interface {
	// PastReadQuery returns a query answering one row and one column: the session's
	// settings that PastRead judges.
	PastReadQuery() string
	// PastRead returns the setting, with its value, that makes a session whose
	// PastReadQuery answered value read the past ("system_versioning_asof = '…'"), or
	// "" when the session reads the current rows.
	PastRead(value string) string
}

// HiddenGuardReader is implemented by a dialect whose catalog lists an object only to
// an account that holds a privilege on it (MySQL/MariaDB: information_schema shows a
// table only to an account with a right on it, a trigger only to one with TRIGGER on
// its table), so that schema.MaxToken's listings — the guards' floor tables
// (FloorFinder), the tombstone tables (TombstoneLister), the tables guarded by their
// triggers alone (GuardFinder) — come back short, with no error, for a least-privilege
// account (red-team rt42c F4). MaxToken then also reads, by name, the floor table of
// the connection's database and each named table's own tombstone table: a table that
// does not exist adds nothing, one the account may not read fails MaxToken
// (schema.MaxTokenPrivilegeError) instead of answering too low.
type HiddenGuardReader interface {
	// TombstoneTableOf returns the tombstone table of table, qualified as table is.
	TombstoneTableOf(table TableName) TableName
	// Denied reports whether err is the server's refusal of a statement for a
	// privilege the account lacks.
	Denied(err error) bool
}
