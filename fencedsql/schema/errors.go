package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ConfigError is a call this package refuses before it sends anything: no dialect, a
// dialect without the feature the call needs (no Floorer, no Registrar, no
// Tombstoner), or a table or column name that is not a plain identifier.
type ConfigError struct {
	Msg string
	// Err is the error the refusal comes from, when there is one: a
	// *dialect.IncompleteError for a dialect that hides optional capabilities of the
	// dialect it is built on (every entry point that takes a dialect refuses one).
	Err error
}

func (e *ConfigError) Error() string { return "fencedsql: " + e.Msg }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// ErrNoFloorGuard means no installed guard reads a token floor where the connection
// reaches: raising a floor there would refuse nothing (RaiseTokenFloor, TokenFloor).
// *FloorError says where guards do read one, when they do elsewhere.
var ErrNoFloorGuard = errors.New("fencedsql: no installed guard reads a token floor")

// ErrFloorUncovered means a table the database records as guarded (a registry row, a
// table carrying the guard's triggers) or one holding such a table's rows (PostgreSQL:
// an inheritance child, a partition) is not held to the token floor: no installed
// guard that reads the floor judges its writes, so a token below the floor still
// writes it (red-team rt34b F1). RaiseTokenFloor and TokenFloor(s) report it rather
// than say the floor is in force; a *FloorError names the tables.
var ErrFloorUncovered = errors.New("fencedsql: a guarded table is not held to the token floor")

// FloorError is RaiseTokenFloor's or TokenFloor's answer when the floor is not in force
// for every guarded table. Without Uncovered (errors.Is ErrNoFloorGuard): no installed
// guard in the connection's scope reads a token floor — the guards are not installed
// (fencedsql-schema -apply installs them), the DSN names another database than the
// guarded one, or the account cannot see the guards (MySQL/MariaDB show a trigger only
// to an account with a right on its table); nothing was written. With Uncovered
// (errors.Is ErrFloorUncovered): guards read a floor, but the tables named are
// recorded as guarded (or hold a guarded table's rows) and no floor-reading guard
// judges their writes; Raised says whether RaiseTokenFloor raised the floor of the
// tables the guards judge before it found them (it does: a floor raised where it can
// be refuses more, never less).
type FloorError struct {
	Op string // "RaiseTokenFloor" or "TokenFloor"
	// Elsewhere names the floor tables that guards outside the connection's scope read
	// (MySQL/MariaDB: other databases of the server): connect to their database.
	Elsewhere []string
	// Uncovered names the tables not held to the floor (qualified where the catalog
	// qualifies them): install the guard on them (fencedsql-schema -apply; PostgreSQL,
	// a child or partition: the side door's Fix schema.Check reports), or, for a table
	// fenced by the wrapper alone, drop it from the registry if it is not guarded. A
	// table whose guard reads a floor table the tools did not raise or read is named
	// too: a registered table of another MySQL/MariaDB database whose guards the
	// account cannot see, a registered table of an ATTACHed SQLite database.
	Uncovered []string
	Raised    bool
}

func (e *FloorError) Error() string {
	if len(e.Uncovered) > 0 {
		state := "the floor is NOT in force for"
		if e.Raised {
			state = "the floor is raised for the tables the guards judge, but NOT for"
		}
		return "fencedsql: " + e.Op + ": " + state + " " + strings.Join(e.Uncovered, ", ") +
			": the database records them (or the tables whose rows they hold) as guarded, and no installed guard that reads the floor these tools raised or read judges their writes, so a token below the floor still writes them; install the guard on them (fencedsql-schema -apply, and the side doors' Fix schema.Check reports), then raise again (a table of another MySQL/MariaDB database: as an account that sees its guards; a table of an ATTACHed SQLite database: its floor is raised only through a connection whose main database is that file, so keep the guarded tables whose floor a failover must raise in the main database)"
	}
	msg := "fencedsql: " + e.Op + ": no installed guard reads a token floor in this database (install the guards: fencedsql-schema -apply; or the account cannot see them): raising a floor here would refuse nothing"
	if len(e.Elsewhere) > 0 {
		msg += "; guards in other databases read " + strings.Join(e.Elsewhere, ", ") + ": connect to their database"
	}
	return msg
}

// Unwrap returns ErrFloorUncovered when tables are not held to the floor, else
// ErrNoFloorGuard.
func (e *FloorError) Unwrap() error {
	if len(e.Uncovered) > 0 {
		return ErrFloorUncovered
	}
	return ErrNoFloorGuard
}

// ErrNotPrimary means RaiseTokenFloor or MaxToken was run on a server that does not
// take writes as a primary (a replica, a read-only server: dialect.PrimaryChecker):
// nothing was written, no token was answered (a replica's copy may lag behind tokens
// the primary accepted); run it on the primary (at a failover, after the promotion,
// before the application writes).
var ErrNotPrimary = errors.New("fencedsql: the server is not a writable primary")

// ErrServerRoleUnknown means RaiseTokenFloor, RaiseTokenFloorReadOnly or MaxToken could
// not tell whether the server is a primary: the account may not list its replication
// connections (MySQL/MariaDB: a replica whose replication is stopped shows no other
// sign; red-team rt48i F2). Nothing was written, no token answered: grant the account
// SLAVE MONITOR (MariaDB 10.5.9+; or SUPER) or REPLICATION CLIENT (MySQL).
var ErrServerRoleUnknown = errors.New("fencedsql: cannot tell whether the server is a primary")

// ErrRaiseNotReplicated means RaiseTokenFloor was called on a session whose settings
// keep its writes from the replicas (MySQL/MariaDB: sql_log_bin = 0, skip_replication,
// a session server_id or gtid_domain_id of its own, a preset gtid_seq_no, wsrep_on off):
// the raise would be reported done and a failover would forget it (red-team rt42f F3).
// Nothing is written.
var ErrRaiseNotReplicated = errors.New("fencedsql: the session's writes are not replicated")

// ErrFloorUnsafe means a token floor table the guards read is one the floor tools will
// not read or write as the role running them: reading or writing it could run another
// role's code with that role's rights (PostgreSQL: row security, not a plain table, a
// floor column that is not a bigint, or — to write it — owned by another role). Nothing
// was read or written; run the tool as the guards' owner, and look at the table.
var ErrFloorUnsafe = errors.New("fencedsql: a token floor table is not safe to use")

// ErrFloorLost means a token floor table the installed guards read has lost its one
// row: the guards refuse the writes they do not accept on their fast path (PostgreSQL:
// tokens below the floor's copy; MySQL/MariaDB and SQLite: every write) until
// RaiseTokenFloor writes it back. A *FloorLostError names the tables.
var ErrFloorLost = errors.New("fencedsql: a token floor table has lost its row")

// FloorLostError is TokenFloor's answer when a floor table the guards read has no row
// (errors.Is ErrFloorLost).
type FloorLostError struct {
	Tables []string // qualified, unquoted
}

func (e *FloorLostError) Error() string {
	return "fencedsql: TokenFloor: the token floor table(s) " + strings.Join(e.Tables, ", ") +
		" have lost their row: the guards refuse the writes they cannot judge against it; write it back with RaiseTokenFloor (fencedsql-schema -raise-floor) at the lock service's LastToken + 1"
}

// Unwrap returns ErrFloorLost.
func (e *FloorLostError) Unwrap() error { return ErrFloorLost }

// ErrFloorUnsettled means RaiseTokenFloor raised the floor (committed: every write that
// starts from then on is held to it) but its context ended while transactions open at
// the raise were still open: one of them may still commit a write judged under the old
// floor. A *SettleError names them.
var ErrFloorUnsettled = errors.New("fencedsql: transactions open across the floor's raise have not ended")

// ErrFloorBlocked means RaiseTokenFloor raised nothing: on a database whose raise
// waits for the lock every open guarded write holds on the floor row
// (dialect.FloorBlockLister: MySQL/MariaDB), the server's lock wait timeout, or the
// context, ended before those transactions did. A *SettleError (Blocked) names their
// sessions; end them (a paused holder's) and raise again.
var ErrFloorBlocked = errors.New("fencedsql: open transactions blocked the floor's raise: nothing raised")

// SettleError is RaiseTokenFloor's answer when its context ended before the
// transactions open at the raise did (errors.Is ErrFloorUnsettled, and the context's
// error); with Blocked, when the raise itself gave up waiting for them and raised
// nothing (errors.Is ErrFloorBlocked, and the server's or the context's error; red-team
// rt31b F8). A blocked raise leaves nothing of its own waiting on the server
// (dialect.FloorWaitBounder: it ends its session when the context ends; red-team
// rt58d F1) and does not list its own session in Open; SessionLeft says when that
// could not be confirmed.
type SettleError struct {
	Open    []string // the sessions' process ids ("prepared" for a prepared transaction, "XA <id>" for a prepared XA transaction; MySQL/MariaDB: connection ids); none when they could not be listed
	Err     error    // the context's error (Blocked: the server's lock wait timeout, or the context's error)
	Blocked bool     // the raise was not made: it waited for these transactions' locks and gave up
	// SessionLeft (Blocked): why the raise's own session, whose write of the floor may
	// still wait on the server (guarded writes then queue behind it until the server
	// gives it up, at most a second after the context's deadline), could not be
	// confirmed ended; nil normally.
	SessionLeft error
}

func (e *SettleError) Error() string {
	if e.Blocked {
		who := "transactions holding row locks (they could not be listed)"
		if len(e.Open) > 0 {
			who = fmt.Sprintf("%d transaction(s) holding row locks (connections %s)", len(e.Open), strings.Join(e.Open, ", "))
		}
		left := ""
		if e.SessionLeft != nil {
			left = fmt.Sprintf(" (the raise's own session may still wait on the server, guarded writes queued behind it, until the server's lock wait timeout: ending it failed: %v)", e.SessionLeft)
		}
		return fmt.Sprintf("fencedsql: RaiseTokenFloor: the floor is NOT raised%s: the raise waited for the floor row, which every open guarded write locks, and gave up; open: %s: end them (KILL) and raise again: %v",
			left, who, e.Err)
	}
	if len(e.Open) == 0 {
		return fmt.Sprintf("fencedsql: RaiseTokenFloor: the floor is raised, but the context ended before the transactions open at the raise could be listed: one may still commit a write judged under the old floor; run it again (with the same floor) to wait for them: %v", e.Err)
	}
	return fmt.Sprintf("fencedsql: RaiseTokenFloor: the floor is raised, but %d transaction(s) open at the raise have not ended (%s): one may still commit a write judged under the old floor; wait for them again (RaiseTokenFloor with the same floor) or end them: %v",
		len(e.Open), strings.Join(e.Open, ", "), e.Err)
}

// Unwrap returns ErrFloorUnsettled (Blocked: ErrFloorBlocked) and Err.
func (e *SettleError) Unwrap() []error {
	if e.Blocked {
		return []error{ErrFloorBlocked, e.Err}
	}
	return []error{ErrFloorUnsettled, e.Err}
}

// MaxTokenRowSecurityError means MaxToken's read of a table was refused because
// row-level security would have hidden rows from the role running it (PostgreSQL: a
// policy applies to that role, and MaxToken reads with row_security off, which turns
// the filter into this error): the highest token is unknown, not the highest of the
// rows the role may see (red-team rt40c F2). Run MaxToken (fencedsql-schema -max-token)
// as the tables' owner (when the table does not FORCE ROW LEVEL SECURITY), a superuser
// or a role with BYPASSRLS.
type MaxTokenRowSecurityError struct {
	Err error
}

func (e *MaxTokenRowSecurityError) Error() string {
	return "fencedsql: MaxToken: row-level security would hide rows of a guarded table from this role, so the highest token cannot be read; run it as the tables' owner (without FORCE ROW LEVEL SECURITY), a superuser or a role with BYPASSRLS: " + e.Err.Error()
}

func (e *MaxTokenRowSecurityError) Unwrap() error { return e.Err }

// MaxTokenSessionError means MaxToken refused the session of the connection it ran
// on, because a setting of it makes reads see the tables as they were at an earlier
// time (MariaDB: Setting is system_versioning_asof, which makes every SELECT of a
// system-versioned table read it as of that time; red-team rt50b F4): the highest
// token the tables held then is not the highest the database accepted. Nothing was
// answered. Run MaxToken on a connection without it: remove the DSN parameter, the
// account's or the server's init_connect, or SET SESSION system_versioning_asof =
// DEFAULT on the connection (with a server-wide value, the session's DEFAULT is that
// value: clear the global one).
type MaxTokenSessionError struct {
	Setting string // the setting and its value
}

func (e *MaxTokenSessionError) Error() string {
	return "fencedsql: MaxToken: the session reads the tables as they were at an earlier time (" + e.Setting +
		"), so the highest token the database accepted since is unknown; run it on a connection without that setting (a DSN parameter, init_connect, a SET on the pooled connection)"
}

// MaxTokenPrivilegeError means MaxToken could not read everything the highest token
// may be kept in, because the account running it lacks a privilege (red-team rt42c
// F4): on MySQL/MariaDB information_schema hides from an account the tables and
// triggers it holds no right on, so an account without SELECT on the guards' floor
// and tombstone tables (fencedsql_floor, fencedsql_tomb_<table>) or without TRIGGER
// (the guards' triggers, which record the floor read and the tables guarded without a
// registry row) would otherwise answer too low with no error. Object names what could
// not be read, Privilege the privilege it needs. Run MaxToken (fencedsql-schema
// -max-token) as the guards' owner, or grant SELECT on the database's tables and, when
// no tables are named, TRIGGER.
type MaxTokenPrivilegeError struct {
	Object    string
	Privilege string
	Err       error // the server's refusal, if any
}

func (e *MaxTokenPrivilegeError) Error() string {
	msg := "fencedsql: MaxToken: the account cannot read " + e.Object + " (it needs the " + e.Privilege +
		" privilege), so the highest token the database accepted is unknown; run it as the guards' owner, or grant " + e.Privilege
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *MaxTokenPrivilegeError) Unwrap() error { return e.Err }
