package fencedsql

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

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

// Dialect is what differs between databases. The dialect packages (postgres, mysql,
// sqlite) export one each as Dialect.
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
	// ColumnsQuery returns a query listing the columns of table (schema may be "") as
	// rows of (column name TEXT, not-null INTEGER 1 or 0). No rows means no such table.
	ColumnsQuery(schema, table string) (query string, args []any)
	// GuardColumnsDDL returns DDL that adds the fencing columns to table.
	GuardColumnsDDL(table, tokenCol, versionCol string, missingToken, missingVersion bool) string
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
	GuardDDL(table, tokenCol, versionCol string) []string
	// UnguardDDL returns the statements that remove it.
	UnguardDDL(table string) []string
	// GuardInstalledQuery returns a query yielding one row with 1 when the guard is
	// installed on table (schema may be ""), 0 or no row otherwise.
	GuardInstalledQuery(schema, table string) (query string, args []any)
}
