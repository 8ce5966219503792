package dialect

import (
	"context"

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
	// ErrorMarkLost is the failure of a one-statement DELETE (DeleteFencer) whose mark
	// did not reach the table's triggers intact: user code run inside the statement (a
	// user's trigger) changed what identifies the statement. The statement failed
	// whole; the wrapper sends the table's DELETEs as two statements from then on.
	ErrorMarkLost
	// ErrorClaimConflict is the failure of a claim by row locator (LocatorChecker's
	// claims: a locking read with ORDER BY, LIMIT, OFFSET or NOWAIT) whose UPDATE could
	// not stamp every row its locking query locked: a concurrent transaction changed
	// those rows while the claim waited for them (READ COMMITTED). The planner's
	// statement raises it itself, as an invalid boolean literal that carries
	// ClaimConflictMark; the statement failed whole.
	ErrorClaimConflict
	// ErrorTooLarge is a value the statement built growing past the server's limit on
	// a value's size (MySQL's max_allowed_packet, error 1301): a keyed statement's
	// record of the rows it stamped, over very many rows or very long keys. The
	// statement failed whole.
	ErrorTooLarge
	// ErrorUnknownName is a statement that names a column or a table the database does
	// not have (PostgreSQL 42703 undefined_column or 42P01 undefined_table, MySQL 1054
	// or 1146, SQLite "no such column" or "no such table"); Column or Table holds the
	// name as the driver reports it (possibly qualified), "" when it does not. On a
	// guarded write whose name is a fencing column or a guard object, the wrapper
	// reads it as the table's schema changed since its lazy check (*SchemaError).
	ErrorUnknownName
	// ErrorInterrupted is a statement the server cancelled on a session that goes on: a
	// statement timeout or a cancel request (PostgreSQL 57014 query_canceled; MySQL
	// 1317 KILL QUERY, MariaDB 1969 max_statement_time, MySQL 3024
	// max_execution_time). It says nothing about the statement's tables: a check query
	// the wrapper runs that fails so is cut (*fencedsql.CheckCutError), not a schema
	// problem. A lost connection or an ended session is not one (ConnLossJudge).
	ErrorInterrupted
	// ErrorDefinerGone is a statement refused because a trigger or routine it ran
	// executes as its DEFINER and that account does not exist (MySQL/MariaDB 1449).
	// On a guarded write the wrapper reads it as the table's guard objects having
	// lost their definer since its lazy check (*SchemaError, red-team rt57b F4).
	ErrorDefinerGone
	// ErrorLockWait is a lock wait the server ended without the lock: a lock timeout
	// (PostgreSQL 55P03 lock_not_available — lock_timeout, or NOWAIT —; MySQL 1205) or a
	// deadlock (PostgreSQL 40P01; MySQL 1213, after which InnoDB rolled the transaction
	// back). The wrapper reads it where it made a statement wait that the caller's own
	// statement would not have: the record of a claim of an absent key, or its probe of
	// whether the key's row exists, waits for a concurrent writer, claimer or locker of
	// the key, where the plain locking read returns no row at once (and takes no lock
	// under READ COMMITTED); every statement of a claim holds a write's lock, where a
	// FOR SHARE read holds a share lock. It then reports the failure as
	// ErrClaimConflict. ErrorInfo.TombstoneWait tells a guarded write's wait in the
	// guard's check of the key's tombstone from the plain statement's own waits.
	//
	// SQLite's SQLITE_BUSY and SQLITE_LOCKED (another connection holds the database's
	// lock past the busy timeout, or a table lock) are one too. A check query the
	// wrapper runs that fails so is cut (*fencedsql.CheckCutError), not a schema
	// problem (red-team rt65b F1).
	ErrorLockWait
)

// ClaimConflictMark starts the value of the error a claim by row locator raises when
// it stamped fewer rows than it locked (ErrorClaimConflict): a dialect recognises the
// failure by it.
const ClaimConflictMark = "fencedsql_claim_conflict"

// ErrorInfo is what a Dialect extracts from a driver error.
type ErrorInfo struct {
	Kind       ErrorKind
	Column     string // NOT NULL: the column
	Constraint string // unique: the constraint or index name
	// Words (unique) is the driver's own description of the violation, rebuilt from
	// its fixed words and the constraint's name, never quoting the duplicated values
	// (which the driver's message may): what a tool matching the driver's text (ent's
	// IsUniqueConstraintError) expects at the start of the wrapper's error. "" lets the
	// wrapper use its own sentence.
	Words string
	Table string // when the driver reports it
	// TombstoneWait (ErrorLockWait) says the wait was in the tombstone guard's check of
	// the key a write gives a row (its trigger function, as the error's context names
	// it): for another transaction's uncommitted record of that key's tombstone — a
	// claim of the absent key — which the same write on an unguarded table does not
	// wait for. false where the driver's error cannot tell (MySQL/MariaDB).
	TombstoneWait bool
	// Schema is Table's schema, when the driver reports it (PostgreSQL): a NOT NULL of
	// a same-named table in another schema is told apart by it.
	Schema string
	// Server says the server answered the statement (or COMMIT) with this error, so
	// that nothing of it was committed (the wrapper's outcome NotCommitted), for a
	// driver whose errors carry no SQLSTATE method (PostgreSQL's do, and are judged by
	// it). A lost connection, a killed session or a server shutting down is not a
	// server's answer: false.
	Server bool
	// Rollback says what the server rolled back with the statement that failed, when
	// it is more than the statement and the session is left outside the transaction:
	// the wrapper then marks the transaction ended, refuses its later statements (they
	// would run in autocommit) and answers its Commit with a rollback (NotCommitted).
	Rollback RollbackScope
	// RollbackQuery (RollbackIf) is the query that tells, on the connection of the failed
	// statement, whether the server rolled back the whole transaction: one value, 0 (or
	// OFF) for no. An error running it counts as yes.
	RollbackQuery string
}

// RollbackScope is what a failed statement's error rolled back (ErrorInfo.Rollback).
type RollbackScope uint8

const (
	// RollbackStatement: the statement at most; the transaction goes on, or stays open
	// and refuses what follows (PostgreSQL's aborted transaction, 25P02).
	RollbackStatement RollbackScope = iota
	// RollbackTransaction: the whole transaction, and the session continues in
	// autocommit (MySQL/MariaDB's deadlock victim, 1213).
	RollbackTransaction
	// RollbackIf: the whole transaction when ErrorInfo.RollbackQuery says so
	// (MySQL/MariaDB's lock wait timeout, 1205, under innodb_rollback_on_timeout); with
	// no RollbackQuery, when the dialect's TxProber finds the connection outside any
	// transaction (SQLite, which ends a transaction on several errors), and always for
	// a dialect without one.
	RollbackIf
)

// TxProber is implemented by a dialect whose database ends a transaction on some
// errors without a query that says so (SQLite: no SQL reads sqlite3_get_autocommit).
// For an error that Classify marks RollbackIf with no RollbackQuery, raised inside a
// transaction, the wrapper asks InTransaction on the failed statement's connection;
// nothing runs on a statement that succeeds.
type TxProber interface {
	// InTransaction reports whether the connection is still inside a transaction. exec
	// sends a statement as it is (unplanned) on that connection; InTransaction must
	// leave the connection as it found it. An error counts as "not inside": the wrapper
	// ends the transaction (its later statements are refused, its Commit rolls back).
	InTransaction(ctx context.Context, exec func(ctx context.Context, query string) error) (bool, error)
}

// TxOpenQuerier is implemented by a dialect on whose database a statement that runs
// dynamic SQL (allowed by WithDynamicSQL: CALL, EXECUTE IMMEDIATE, a compound
// statement) can end the open transaction and still succeed: a procedure that
// commits, EXECUTE IMMEDIATE of COMMIT or of DDL, a handler that swallows the deadlock
// the server rolled the whole transaction back for (MySQL/MariaDB). After such a
// statement succeeds inside a transaction, the wrapper runs TxOpenQuery on its
// connection: one value, 0 (or OFF) when the connection is outside any transaction.
// The wrapper then ends its transaction as for a server rollback (later statements
// refused unsent), and Commit and Rollback report that the outcome of its writes is
// unknown. An error, or an answer other than one value, counts as outside. Nothing
// runs after other statements, nor on a pool that does not allow dynamic SQL.
type TxOpenQuerier interface {
	TxOpenQuery() string
}

// TxMarker is implemented by a dialect on whose database a statement that runs
// dynamic SQL (allowed by WithDynamicSQL) can end the open transaction and begin
// another one, or begin one outside any: a procedure that runs COMMIT (or ROLLBACK)
// and then START TRANSACTION leaves the session inside a transaction, which
// TxOpenQuerier cannot tell from the wrapper's own (MySQL/MariaDB). MarkStatements
// returns the statements that set and release a savepoint named name (a plain
// identifier the wrapper makes). Inside a transaction the wrapper sets one before such
// a statement and releases it after: a transaction ended inside the statement takes
// its savepoints with it, so the release fails and the wrapper ends its transaction
// with an Unknown outcome. Outside a transaction it sets and releases one after such a
// statement: the release succeeds only inside a transaction (one the statement
// opened), which the wrapper then rolls back, failing the statement and discarding the
// connection.
type TxMarker interface {
	MarkStatements(name string) (set, release string)
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
	// means nullable. No rows means no such table. A row may carry a third value, a
	// note on what no flag can say (NULL or "" for nothing): "view" when table is a
	// view (on every row; "view:" followed by the tables it reads, comma-separated,
	// where the catalog tells); the kind of any other relation that is not a table,
	// on every row ("foreign table", "sequence", "virtual table", "index", "composite
	// type", "system view"); "generated" for a generated column. The wrapper refuses
	// each, as such (schema.Columns).
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

// ExactIdenter is implemented by dialects whose quoted identifiers match only their
// exact spelling (PostgreSQL: "Fence_Token" is not fence_token). The wrapper quotes the
// configured table and column names in the SQL it writes, so the column check must
// find them spelt exactly there; in dialects without it (MySQL, SQLite) column names
// compare case-insensitively.
type ExactIdenter interface {
	ExactQuotedIdents() bool
}

// SameColumnName reports whether the configured column names a and b name one column
// of a table in d, compared as d's server compares the quoted names the wrapper writes
// (sqllex.SameName): exactly where d's quoted names are exact (ExactIdenter: on
// PostgreSQL "Tok" and tok are two columns); ignoring ASCII case on SQLite; by each
// character's lower-case form on MySQL/MariaDB (É is é). The planner asks the same
// question of the names in statement text with the same function.
func SameColumnName(d Dialect, a, b string) bool {
	if e, ok := d.(ExactIdenter); ok && e.ExactQuotedIdents() {
		return a == b
	}
	return sqllex.SameName(d.Syntax(), a, b)
}
