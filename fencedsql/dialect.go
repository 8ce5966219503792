package fencedsql

import (
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
//     row under an older token), its catalog queries and its purge.
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
// docs/design.md, no resurrection): a trigger records, in the tombstone table
// TombstoneTable of the guarded table's schema, the primary key and the fence token of
// every deleted row, and a BEFORE INSERT trigger refuses an INSERT (or upsert) of a
// row with that key under an older token, with the NOT NULL violation on the token
// column that the wrapper reports as ErrFenced. See CheckTombstones and
// PurgeTombstones; the dialect packages document their DDL.
type Tombstoner interface {
	// PrimaryKeyQuery returns a query listing the primary key columns of table, one
	// row (column name) each, in key order. No rows: no primary key, or no such table.
	PrimaryKeyQuery(table TableName) (query string, args []any)
	// TombstoneDDL returns the statements that create the tombstone table of table's
	// schema when it is missing and install table's tombstone triggers, in order
	// (re-running them replaces the triggers). pk is the primary key, in key order.
	TombstoneDDL(table TableName, pk []string, tokenCol string) []string
	// UntombstoneDDL returns the statements that remove table's tombstone triggers
	// (the tombstone table and its rows stay).
	UntombstoneDDL(table TableName) []string
	// TombstoneInstalledQuery returns a query yielding one row with 1 when the
	// tombstone triggers are installed on table, 0 or no row otherwise.
	TombstoneInstalledQuery(table TableName) (query string, args []any)
	// PurgeTombstonesQuery returns the statement that deletes the tombstones of
	// schema's tombstone table ("" for the connection's default) recorded more than
	// olderThan ago by the database's clock.
	PurgeTombstonesQuery(schema string, olderThan time.Duration) (query string, args []any)
}

// TombstoneTable is the name of the tombstone table the Tombstoner DDL creates, one
// per schema (database on MySQL): (table_name, pk, fence_token, deleted_at), primary
// key (table_name, pk), pk being the deleted row's primary key as JSON array text.
const TombstoneTable = "fencedsql_tombstones"
