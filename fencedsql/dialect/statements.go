package dialect

import (
	"context"
	"database/sql/driver"
)

// StatementForgetter is implemented by a dialect whose server or driver keeps, per
// connection, statements analysed once and reused (PostgreSQL: the session's prepared
// statements and their cached plans, and pgx's statement cache of server-side
// prepared statements keyed by text, the wrapper's own check queries among them). Such
// a statement keeps the name resolution it was analysed under — PostgreSQL does not
// analyse it again when a same-named table appears earlier on the search_path — and
// it fails once the session dropped it (DISCARD ALL, DEALLOCATE) while the driver
// still sends it by name. The wrapper asks the dialect to forget them after DDL
// through the pool moved what a guarded name resolves to (at each connection's next
// statement), after a statement that drops the session's prepared statements, and
// before it runs again a check query that failed so (docs/design.md G13).
type StatementForgetter interface {
	// ForgetStatements makes the server session behind raw analyse every statement it
	// cached afresh at its next use, under the name resolution then in force. lost
	// says the session may have dropped prepared statements the driver still sends by
	// name: the driver's own cache of them is dropped too, so that it prepares each
	// again. It returns an error when it could not (the session is in a failed
	// transaction, or busy): the wrapper asks again before the next statement.
	ForgetStatements(ctx context.Context, raw driver.Conn, lost bool) error
	// StatementLost reports whether err says a prepared statement the driver sent by
	// name no longer exists in the session (PostgreSQL 26000
	// invalid_sql_statement_name).
	StatementLost(err error) bool
}
