package fencedsql

import (
	"context"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Syntax describes the lexical rules of a dialect's SQL (quotes, comments, placeholders).
type Syntax = sqllex.Syntax

// Lexical rules of the dialects this module ships, for Dialect implementations.
var (
	PostgresSyntax = sqllex.Postgres
	MySQLSyntax    = sqllex.MySQL
	SQLiteSyntax   = sqllex.SQLite
)

// ErrorKind classifies a driver error for the wrapper.
type ErrorKind uint8

const (
	// ErrorOther is any error the wrapper passes through unchanged.
	ErrorOther ErrorKind = iota
	// ErrorNotNull is a NOT NULL violation (PostgreSQL 23502, MySQL 1048, SQLite
	// SQLITE_CONSTRAINT_NOTNULL); Column names the column.
	ErrorNotNull
	// ErrorUnique is a unique violation (PostgreSQL 23505, MySQL 1062, SQLite
	// SQLITE_CONSTRAINT_UNIQUE/PRIMARYKEY); Constraint names it when known.
	ErrorUnique
	// ErrorGuard is a refusal by the dialect's database-side guard (Guarder): a write
	// that did not follow the fencing protocol; Table names the table when known.
	ErrorGuard
	// ErrorBelowFloor is a refusal by the guard of a write whose token is below the
	// database's token floor (Floorer); Table names the table when known.
	ErrorBelowFloor
)

// ErrorInfo is what a Dialect extracts from a driver error.
type ErrorInfo struct {
	Kind       ErrorKind
	Column     string // NOT NULL: the column
	Constraint string // unique: the constraint or index name
	Table      string // when the driver reports it
}

// TableName names one table. Schema is "" for an unqualified name, which the database
// resolves as it resolves the statements' own names (PostgreSQL: the search_path;
// MySQL: the connection's database; SQLite: the main database, then attached ones).
// Both parts are plain identifiers (letters, digits, _ and $, not quoted): see
// ParseTableName.
type TableName struct{ Schema, Name string }

// ParseTableName splits "table" or "schema.table" and validates both parts as plain
// identifiers (letters, digits, _ and $ not first, non-ASCII letters; at most 128
// bytes). A bad name is a *ConfigError.
func ParseTableName(s string) (TableName, error) {
	t, problem := parseTableName(s)
	if problem != "" {
		return TableName{}, configErr("table %q: %s", s, problem)
	}
	return t, nil
}

// String returns "schema.name", or "name" when Schema is empty, unquoted.
func (t TableName) String() string {
	if t.Schema == "" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// Quote returns the name with each part quoted by quote (a Dialect's QuoteIdent).
func (t TableName) Quote(quote func(string) string) string {
	if t.Schema == "" {
		return quote(t.Name)
	}
	return quote(t.Schema) + "." + quote(t.Name)
}

// Dialect is what differs between databases. The dialect packages (postgres, mysql,
// sqlite) export one each as Dialect, and only they implement it.
//
// A dialect may implement optional interfaces, which the package discovers with a type
// assertion (like database/sql/driver's optional interfaces):
//
//   - Guarder: the DDL of the database-side guard (triggers that refuse writes that
//     bypass the wrapper), and the query that tells whether it is installed;
//   - NotNullFixer: the DDL that makes an existing, nullable fencing column NOT NULL;
//   - Tombstoner: the DDL of the tombstone guard (docs/design.md G9, no resurrection of a deleted
//     row under an older token), its catalog queries and its purge;
//   - SideDoorFinder: the catalog inspection that finds a guarded table's database-level
//     side doors (non-transactional engine, updatable views, unguarded children and
//     partitions, cascading foreign keys, rules), each with its fix.
//
// Tables are passed as TableName, already validated, with the case in which they were
// configured; a dialect folds case where its database does.
type Dialect interface {
	// Name is a short name ("postgres", "mysql", "sqlite").
	Name() string
	// Syntax returns the lexical rules of the dialect's SQL.
	Syntax() Syntax
	// NumberedParams reports $n placeholders (true) or positional ? (false).
	NumberedParams() bool
	// QuoteIdent quotes one identifier.
	QuoteIdent(name string) string
	// Classify inspects a driver error.
	Classify(err error) ErrorInfo
	// ColumnsQuery returns a query listing the columns of table as rows of (column
	// name, not-null flag). The flag is 1, true or t for a NOT NULL column (any
	// spelling of those, as the driver returns it); anything else, NULL included,
	// means nullable. No rows means no such table.
	ColumnsQuery(table TableName) (query string, args []any)
	// GuardColumnsDDL returns the statements that add the missing fencing columns to
	// table, as BIGINT NOT NULL DEFAULT 0, in order (one Exec each).
	GuardColumnsDDL(table TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string
	// SessionQuery returns a query whose single text value CheckSession validates, run
	// once per connection before its first guarded write; "" for none.
	SessionQuery() string
	// CheckSession validates the value SessionQuery returned; a non-nil error refuses
	// guarded writes on that connection.
	CheckSession(value string) error
}

// Guarder is implemented by dialects that can install database-side guards: triggers
// that refuse, inside the database, writes that bypass the wrapper (an UPDATE that
// lowers the token or does not advance the version, and where the dialect can tell, a
// DELETE that did not go through the fencing UPDATE). The dialect packages of this
// module implement it; CheckSchema reports a missing guard with the DDL that installs it.
type Guarder interface {
	// GuardDDL returns the statements that install the guard on table, in order.
	GuardDDL(table TableName, tokenCol, versionCol string) []string
	// UnguardDDL returns the statements that remove it.
	UnguardDDL(table TableName) []string
	// GuardInstalledQuery returns a query yielding one row with 1 when the guard is
	// installed on table, 0 or no row otherwise.
	GuardInstalledQuery(table TableName) (query string, args []any)
}

// NotNullFixer is implemented by dialects that can make an existing column NOT NULL.
// CheckSchema and the lazy check before the first guarded write propose its
// statements for a nullable fencing column; a dialect without it (or returning no
// statement, like SQLite, which cannot alter a column) gets the advice to rebuild the
// table.
type NotNullFixer interface {
	// NotNullDDL returns the statements that make column of table NOT NULL (DEFAULT 0).
	// Rows holding NULL in it must be fixed first.
	NotNullDDL(table TableName, column string) []string
}

// Tombstoner is implemented by dialects that can keep tombstones (G9 in
// docs/design.md, no resurrection). Each guarded table gets a tombstone table of its
// own, in its schema, whose key columns have the primary key's own types and
// collations, so that a tombstone matches a key exactly when the table's own key
// would: by the database's equality, never by a rendering that depends on session
// settings (time zone, output formats, float digits) or on case. Triggers record the
// primary key and fence token of every deleted row (and of the key a key-changing
// UPDATE leaves), and refuse an INSERT, upsert or key-changing UPDATE onto a key whose
// tombstone carries a newer token, with the NOT NULL violation on the token column
// that the wrapper reports as ErrFenced. The check runs after the database has waited
// for a concurrent DELETE of the same key to end, so a DELETE that commits while the
// INSERT waits is seen. See CheckSchema and PurgeTombstones; the dialect packages
// document their DDL.
type Tombstoner interface {
	// PrimaryKeyQuery returns a query listing the primary key columns of table, one
	// row each in key order: (column name, column type as the dialect's DDL spells
	// it, collation or "" for none, the schema the table resolves to). No rows: no
	// primary key, or no such table.
	PrimaryKeyQuery(table TableName) (query string, args []any)
	// TombstoneDDL returns the statements that create table's tombstone table when it
	// is missing and install table's tombstone triggers, in order (re-running them
	// replaces the triggers). key is the primary key, in key order; table should carry
	// its schema (CheckSchema resolves it; see TombstoneFix).
	TombstoneDDL(table TableName, key []KeyColumn, tokenCol string) []string
	// UntombstoneDDL returns the statements that remove table's tombstone triggers
	// (the tombstone table and its rows stay).
	UntombstoneDDL(table TableName) []string
	// TombstoneInstalledQuery returns a query yielding one row with 1 when the
	// current version of the tombstone triggers is installed on table, 0 or no row
	// otherwise.
	TombstoneInstalledQuery(table TableName) (query string, args []any)
	// PurgeTombstonesQuery returns the statement that deletes the tombstones of
	// table recorded more than olderThan ago by the database's clock.
	PurgeTombstonesQuery(table TableName, olderThan time.Duration) (query string, args []any)
}

// KeyColumn is one column of a guarded table's primary key, as Tombstoner's
// PrimaryKeyQuery reads it from the catalog.
type KeyColumn struct {
	Name      string // column name
	Type      string // type as the dialect's DDL spells it (e.g. "numeric(10,2)", "varchar(20)")
	Collation string // collation name, "" for none or the type's default
}

// TombstoneTablePrefix starts the name of every tombstone table: a guarded table's
// tombstones live in "fencedsql_tomb_<table>" in its schema (shortened with a hash
// where the database limits identifier length). Like every object whose name starts
// with "fencedsql_", it belongs to the guards.
const TombstoneTablePrefix = "fencedsql_tomb_"

// TombstoneTable is the name of the single tombstone table of earlier versions, one
// per schema, keyed by the primary key rendered as JSON text. It is no longer written
// or read.
//
// Deprecated: tombstones are kept per table; see TombstoneTablePrefix.
const TombstoneTable = "fencedsql_tombstones"

// SideDoorFinder is implemented by dialects that can find a guarded table's
// database-level side doors: objects of the database through which a statement that
// does not name the table (so the wrapper, which matches table names, sends it as
// written), or a write the database treats specially, changes the table's rows
// without the fence — a non-transactional engine, an updatable view, an inheritance
// child or partition without the guard, a foreign key whose cascade writes the table
// where triggers do not see it, a rule. CheckSchema reports each SideDoor with its fix;
// see CheckSchema for the list and the dialect packages for what each finds.
type SideDoorFinder interface {
	// SideDoors inspects the catalog through query (read-only) and returns the side
	// doors of t.Table, none when it has none. An error is a failed catalog query.
	SideDoors(ctx context.Context, query CatalogQuery, t SideDoorTable) ([]SideDoor, error)
}

// CatalogQuery runs a read-only catalog query and returns its rows as text: NULL as
// "", booleans as "1"/"0", numbers in decimal.
type CatalogQuery func(ctx context.Context, query string, args ...any) ([][]string, error)

// SideDoorTable is what a SideDoorFinder is told about the guarded table.
type SideDoorTable struct {
	Table                      TableName
	TokenColumn, VersionColumn string
	// PrimaryKey is the table's primary key (nil: none, or the dialect keeps no
	// tombstones); Tombstones: the tombstone guard is installed on the table or the
	// report's Fix installs it, so a fix may extend it to other objects.
	PrimaryKey []string
	Tombstones bool
}

// SideDoorKind names a kind of side door.
type SideDoorKind string

// The side doors CheckSchema knows.
const (
	// SideDoorEngine: the table's storage engine is not transactional (MySQL MyISAM,
	// Aria, MEMORY…): a fenced statement that fails leaves the rows it already wrote.
	SideDoorEngine SideDoorKind = "engine"
	// SideDoorView: an updatable view over the table (or a view with INSTEAD OF
	// triggers or rules that write it): writes through it do not name the table.
	SideDoorView SideDoorKind = "view"
	// SideDoorChild: a PostgreSQL inheritance child of the table without the guard
	// and tombstone triggers: the parent's row triggers do not fire for its rows.
	SideDoorChild SideDoorKind = "child"
	// SideDoorPartition: a PostgreSQL partition (or sub-partition) of the table
	// without the guard's triggers: TRUNCATE of a partition fires only its own.
	SideDoorPartition SideDoorKind = "partition"
	// SideDoorCascade: a foreign key of the table with ON DELETE/ON UPDATE CASCADE,
	// SET NULL or SET DEFAULT: a write to the referenced table changes the table's
	// rows, with or without its triggers depending on the database.
	SideDoorCascade SideDoorKind = "cascade"
	// SideDoorRule: a PostgreSQL rule on the table, or a rule elsewhere whose action
	// writes it: the rewritten statement is not the one the wrapper fenced.
	SideDoorRule SideDoorKind = "rule"
)

// SideDoor is one side door of a guarded table, found by a SideDoorFinder.
type SideDoor struct {
	Kind SideDoorKind
	// Object names the view, child, partition, constraint or rule as the database
	// names it ("schema.name", "constraint on table", …).
	Object string
	// Problem says, in words, how the side door writes around the fence, and what to
	// do where Fix is empty.
	Problem string
	// Fix holds the statements that close it, in order, run after the table's own
	// fixes (they may use the guard's objects); empty when no statement can.
	Fix []string
	// Note: the database closes this door itself (its triggers fire there, and the
	// guard refuses the write), so it is no problem: CheckSchema reports it in
	// TableReport.Notes and the table stays OK.
	Note bool
}
