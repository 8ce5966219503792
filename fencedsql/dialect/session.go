package dialect

import (
	"context"
	"database/sql/driver"
)

// The session check (docs/design.md G11: session settings that change how the server
// reads SQL text, or what it does with the fencing NULL, are verified before a guarded
// write, never presumed).
//
// The rewriter reads a statement with its dialect's lexer, which assumes the server
// reads it the same way; and a fenced write relies on the NOT NULL violation that the
// fencing NULL causes. Some session settings break either assumption: PostgreSQL's
// standard_conforming_strings (off: backslashes escape in '…' strings) and a
// client_encoding whose multibyte characters can end in a backslash or quote byte
// (SJIS, BIG5, GBK, GB18030, UHC, JOHAB); MySQL/MariaDB's sql_mode (not strict: the
// NULL is stored as 0; ANSI_QUOTES, NO_BACKSLASH_ESCAPES: other quoting) and
// character_set_client (GBK, SJIS, Big5, CP932, GB18030). A dialect also reads there
// the protected settings a DSN parameter or init_connect can set unseen (MySQL:
// sql_log_bin, autocommit, completion_type, a clock set by hand …). The dialect's SessionQuery
// reads all of its settings in one round trip and CheckSession judges them; a session
// it refuses gets a *SessionError (errors.Is ErrSchema) before anything is sent.
//
// When it runs (verifySession):
//
//   - A dialect that implements SessionTracker and whose driver keeps the settings on
//     the client side is checked before every guarded write, from that state, without
//     a round trip: PostgreSQL reports standard_conforming_strings and client_encoding
//     to the client (ParameterStatus) whenever they change, whatever changed them — SET,
//     SET LOCAL and its revert at COMMIT/ROLLBACK, set_config() in any query or
//     function, a DO block, RESET, a DSN or startup parameter — and pgx keeps them.
//     Such a dialect under a driver that does not track them (lib/pq, a mock) runs the
//     SessionQuery before every guarded write: any query can change them there.
//   - Any other dialect (MySQL/MariaDB) runs the SessionQuery before the first guarded
//     write of a connection, and again before the first guarded write after a
//     statement that may have changed the settings (mayChangeSession, the plan's
//     resetsSession): on the happy path a guarded write stays one statement.
type SessionTracker interface {
	// TrackedSession returns the value the dialect's SessionQuery would return on raw
	// (the wrapped driver's connection, possibly under other wrappers that expose it
	// with a Raw() driver.Conn method), read from what the driver keeps, without a
	// round trip. ok is false when raw does not keep it. ctx is the statement's: a
	// tracker that reads part of the value with a query of its own (PostgreSQL's
	// synchronous_commit, once per connection) runs it under ctx, so that the
	// caller's deadline and cancellation hold (red-team rt44f F1); when that query
	// fails, ok is false and the wrapper runs SessionQuery under the same ctx.
	TrackedSession(ctx context.Context, raw driver.Conn) (value string, ok bool)
}

// SessionForgetter is implemented by a SessionTracker that keeps part of what it
// reports from a read made once per connection (a setting the driver is not told
// about). ForgetTrackedSession drops what it kept for raw, so that the next
// TrackedSession reads it again: the wrapper calls it when the caller takes the raw
// connection (sql.Conn.Raw), where statements it cannot see may change the setting,
// and before a statement that may change the session (the plan's ResetsSession: SET,
// CALL, DO …, each execution of such a prepared statement).
type SessionForgetter interface {
	ForgetTrackedSession(raw driver.Conn)
}

// RecordsSessionChecker is implemented by dialects in which a session setting can
// change the rows the wrapper's own catalog reads return, not only whether a write
// fails (MySQL/MariaDB: sql_select_limit caps every top-level SELECT, the registry's
// and the guard-trigger record's included; character_set_results converts the names
// they return): a record read under such a setting gives a silently shorter list of
// guarded tables, or names no statement spells (red-team rt40b F3, F4). The wrapper
// runs the dialect's session check on a pool's first connection before it reads what
// the database records as guarded, and refuses to open the pool on a *SessionError
// with Records set, whatever the schema check says (a query that fails with the check
// off — a mock — is logged). CheckSession must report such a setting before any other
// that is not about reading (a session check with the schema check off enforces only
// those). RecordsSessionError judges a value of SessionQuery for those settings only:
// the error CheckSession would return for them (a *fencedsql.SessionError with
// Records), nil when the session's catalog reads read what is installed whatever
// else is wrong with it. The pool runs it on its first connection; fencedsql/schema's
// Check, PurgeTombstones and MaxToken run it before reading the catalog (red-team
// rt52b F4: under sql_select_limit=1 Check read one column of a healthy guard and
// proposed an ALTER TABLE adding the others).
type RecordsSessionChecker interface {
	RecordsSessionError(value string) error
}

// ResetJudge is implemented by a dialect that can tell whether a driver connection's
// driver.SessionResetter — run by database/sql before it reuses a pooled connection —
// runs no code that can change the session (go-sql-driver/mysql's checks the
// connection only; pgx's stdlib runs the OptionResetSession hook, pgx's own no-op
// when none was given). The wrapper re-arms the connection's session check and its
// name-resolution comparison after every reuse (one query before the next guarded
// write) unless ResetKeepsSession reports true: a hook there may set search_path or
// synchronous_commit unseen (red-team rt44b F3). It must answer false when unsure.
//
// raw is the connection the wrapper wraps: the driver's own, or the outermost of
// wrapper layers (otelsql's, an application's) that may expose what they wrap with a
// Raw() driver.Conn method. database/sql runs the outermost layer's ResetSession, so
// every layer's code runs on reuse, not only the driver's: a judge must answer false
// unless each layer between raw and the driver's connection is known to run nothing of
// its own there (red-team rt45c F5, F6: a layer setting the tenant's search_path or
// sql_mode, or reconnecting, was not seen; the stock judges accept otelsql's layer
// only, through internal/unwrap's ConnForwarded).
type ResetJudge interface {
	ResetKeepsSession(raw driver.Conn) bool
}

// ToolSessionChecker is implemented by dialects in which a session setting converts
// the names fencedsql/schema sends to the server: RegisterTables would record, and
// Check, MaxToken and PurgeTombstones look up, another name than the one given
// (red-team rt56a F4: from a PostgreSQL session whose client_encoding is LATIN1, or a
// MariaDB one whose character_set_client is latin1 or cp1250, "café" was recorded as
// "cafÃ©", a name no table has, which every pool then guarded, and Check answered "no
// such table" for the existing table). ToolSessionError judges a value of
// SessionQuery: a *fencedsql.SessionError for such a setting (or one
// RecordsSessionChecker refuses), nil otherwise. fencedsql/schema runs it before
// anything else, on the connection it reads and writes through.
type ToolSessionChecker interface {
	ToolSessionError(value string) error
}
