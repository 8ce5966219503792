package fencedsql

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Sentinel errors. Every error the wrapper returns for these conditions satisfies
// errors.Is with one of them; the typed errors below carry the details, and the
// driver's own error stays reachable with errors.As.
var (
	// ErrFenced means a newer token already wrote a row the statement targeted. The
	// statement changed nothing (and on PostgreSQL the transaction is aborted): the
	// caller's lease is stale and it must stop writing.
	ErrFenced = errors.New("fencedsql: write fenced by a newer token")

	// ErrVersionConflict means a statement run with ExpectVersion found a targeted row
	// whose version is no longer the expected one. Nothing changed. It is distinct from
	// "no such row" (0 rows affected, no error) and from ErrFenced.
	ErrVersionConflict = errors.New("fencedsql: version conflict")

	// ErrNoToken means a write to a guarded table was attempted without a fencing token
	// in its context or transaction. Nothing was sent to the database.
	ErrNoToken = errors.New("fencedsql: write to a guarded table without a fencing token")

	// ErrUnsupported means a statement on a guarded table has a form the rewriter cannot
	// fence safely (or sets the fence or version column itself). It was not sent.
	ErrUnsupported = errors.New("fencedsql: statement cannot be fenced")

	// ErrDuplicate means a unique constraint refused the write. The constraint's name
	// is in *DuplicateError.
	ErrDuplicate = errors.New("fencedsql: unique constraint violated")

	// ErrSchema means a guarded table lacks what fencing needs (the token and version
	// columns, NOT NULL), or the session is not safe for fencing (a non-strict MySQL
	// sql_mode). *SchemaError names the table and the DDL that fixes it.
	ErrSchema = errors.New("fencedsql: guarded table or session not fit for fencing")

	// ErrNotPrimary means a guarded write was refused because the connection's server
	// is not a writable primary: a MySQL/MariaDB replica (its replication threads run)
	// or a read_only server (red-team rt42f F2). Its floor and rows lag behind the
	// primary's, which a write there never reaches: judged by them, a stale token would
	// be acknowledged. Nothing was sent. It comes as a *SessionError (NotPrimary set),
	// so errors.Is(err, ErrSchema) holds too; a new connection to the primary writes.
	ErrNotPrimary = errors.New("fencedsql: the server is not a writable primary")

	// ErrGuard means the database-side guard (the dialects' dialect.Guarder triggers) refused a
	// write that did not follow the fencing protocol: an UPDATE that lowers the token or
	// does not advance the version, a DELETE the transaction did not fence first, a
	// TRUNCATE. Nothing changed. Through the wrapper it comes from SQL the wrapper could
	// not fence itself (dynamic SQL allowed with WithDynamicSQL, a function called from a
	// read); outside it, classify a driver error with AsGuardError. To change guarded
	// rows outside application code, see Maintain.
	ErrGuard = errors.New("fencedsql: write refused by the database-side guard")

	// ErrClaimConflict means a claimed locking read (SELECT … FOR UPDATE with ORDER BY,
	// LIMIT, OFFSET or NOWAIT, on PostgreSQL) could not stamp every row its locking
	// query locked, so it returned nothing and claimed nothing, and the transaction is
	// aborted. The usual cause is a race under READ COMMITTED: the read waited for rows
	// a concurrent transaction changed, and its window then held a row out of the
	// claim's reach (REPEATABLE READ and SERIALIZABLE report a serialization failure
	// instead). Retry the transaction: the claim then reads the rows as they now are —
	// and fails with ErrFenced if a newer token owns one of them. A conflict on every
	// retry means an UPDATE of the table cannot reach rows a SELECT can (a row-level
	// security policy, a BEFORE UPDATE trigger that skips the row). A claim of an
	// absent key (PostgreSQL, docs/design.md G10) also fails with it when a concurrent
	// transaction wrote the key under an older token after the claim read it as absent
	// (under REPEATABLE READ and SERIALIZABLE: was writing it): the retry finds the row.
	// A lock wait the server ends without the lock (a lock timeout, a deadlock) in any
	// statement the wrapper sends for a claim — but under NOWAIT — is ErrClaimConflict
	// too, and so, on PostgreSQL, is a guarded write's wait for another transaction's
	// claim of its key as absent: the server's error stays reachable with errors.As.
	ErrClaimConflict = errors.New("fencedsql: claim could not stamp every row it locked")

	// ErrLeaseServicesDiffer means the leases bound to one transaction or statement
	// (WithLeases, a nested WithLease, a statement's lease joining its transaction)
	// come from two lock services, as their lockclient.ServiceIdentifier names tell:
	// tokens of two services do not compare, so no token of the binding may stamp the
	// rows of both locks. Nothing was sent; a statement refused inside a transaction
	// breaks it (Commit rolls back). Take every lock of one piece of work from one lock
	// service. It comes as a *LeaseServicesError.
	ErrLeaseServicesDiffer = errors.New("fencedsql: leases of two lock services bound together")
)

// guardHint is the advice every GuardError carries.
const guardHint = "write through the fenced driver with a lease from the application's lock service (fencedsql.Maintain for administrative changes), or remove the guard"

// markLostHint is the advice of a GuardError for a one-statement DELETE whose mark
// user code inside the statement made the table's triggers miss (dialect.ErrorMarkLost).
const markLostHint = "code run inside the DELETE (a trigger on the table) changed what identifies the statement to the guard's triggers; nothing was deleted, and this pool now sends the table's DELETEs as two statements: retry"

// GuardError is a refusal by the database-side guard. errors.Is(err, ErrGuard) holds;
// the driver's error stays reachable. Error() starts with the driver's own message and
// ends with the hint.
type GuardError struct {
	Table string // the table, when the database reported it
	Hint  string // what to do instead
	Err   error  // the driver's error
}

func (e *GuardError) Error() string { return e.Err.Error() + " (hint: " + e.Hint + ")" }

// Unwrap returns ErrGuard and the driver's error.
func (e *GuardError) Unwrap() []error { return []error{ErrGuard, e.Err} }

// AsGuardError returns err as a *GuardError when the dialect classifies it as a
// refusal by its database-side guard (as a *BelowFloorError when the refusal is the
// token floor's), and err unchanged otherwise. It is for errors of
// plain (non-fenced) connections; the fenced driver maps them itself.
func AsGuardError(d dialect.Dialect, err error) error {
	if err == nil || d == nil {
		return err
	}
	switch info := d.Classify(err); info.Kind {
	case dialect.ErrorGuard:
		return &GuardError{Table: info.Table, Hint: guardHint, Err: err}
	case dialect.ErrorBelowFloor:
		return &BelowFloorError{Table: info.Table, Err: err}
	}
	return err
}

// FencedError is returned when the database refused a write because a targeted row
// carries a newer token. errors.Is(err, ErrFenced) holds.
//
// Its message is the wrapper's own, not the driver's: the driver reported a NOT NULL
// violation on a column the rewritten statement itself set to NULL, and on the raw
// driver the statement would have succeeded, so there are no driver words to keep (an
// ORM matching "not-null" in the text would take it for a validation error). The same
// holds for VersionConflictError.
type FencedError struct {
	Table string // the guarded table
	Token uint64 // the stale token the statement carried
	Err   error  // the driver's error
}

func (e *FencedError) Error() string {
	return "fencedsql: write to " + e.Table + " with token " + strconv.FormatUint(e.Token, 10) +
		" fenced: a newer token already wrote a targeted row; nothing was changed"
}

// Unwrap returns ErrFenced and the driver's error.
func (e *FencedError) Unwrap() []error { return []error{ErrFenced, e.Err} }

// VersionConflictError is returned when an ExpectVersion write found another version.
type VersionConflictError struct {
	Table    string
	Expected int64
	Err      error
}

func (e *VersionConflictError) Error() string {
	return "fencedsql: version conflict on " + e.Table + ": a targeted row is no longer at version " +
		strconv.FormatInt(e.Expected, 10) + "; nothing was changed"
}

func (e *VersionConflictError) Unwrap() []error { return []error{ErrVersionConflict, e.Err} }

// ClaimConflictError is a claimed locking read that could not claim exactly the rows
// its locking query locked (ErrClaimConflict), or (Absent) a claim of an absent key
// whose record found the key written by a concurrent transaction under an older token
// after the claim's read (red-team rt44a F1). It is also a lock wait the server ended
// without the lock (a lock timeout, a deadlock) in a statement the wrapper sent for a
// claim (Absent: the record of an absent key or its probe), and, on PostgreSQL, in
// the tombstone guard's check of the key a guarded write gives a row, where it waits
// for another transaction's claim of that key as absent (red-team rt64a F2, F3).
// Err is the driver's error.
type ClaimConflictError struct {
	Table  string
	Absent bool
	Err    error
	// wait says Err is a lock wait the server ended without the lock: a claim's
	// statement's (claimWaitFailed), or a guarded write's in the tombstone guard's check
	// of its key (mapErr).
	wait lockWaiter
}

// lockWaiter is the statement of a ClaimConflictError that waited (ClaimConflictError.wait).
type lockWaiter uint8

const (
	claimWaited lockWaiter = iota + 1 // a statement of a claim (0: no lock wait)
	writeWaited                       // a guarded write, in the tombstone guard's check
)

func (e *ClaimConflictError) Error() string {
	switch e.wait {
	case claimWaited:
		return "fencedsql: claim on " + e.Table + ": a statement of the claim waited for a lock a concurrent transaction holds (on a row, or on the claimed key's tombstone), " +
			"and the server ended the wait without it (a lock timeout or a deadlock): nothing was claimed; roll back and retry the transaction (" + e.Err.Error() + ")"
	case writeWaited:
		return "fencedsql: write on " + e.Table + " waited in the tombstone guard's check of its key for a concurrent transaction's record of that key's tombstone " +
			"(a claim of the absent key, or a write of the key), and the server ended the wait without it (a lock timeout or a deadlock): nothing was written; roll back and retry the transaction (" + e.Err.Error() + ")"
	}
	if e.Absent {
		return "fencedsql: claim on " + e.Table + " found no row, but a concurrent transaction wrote the key under an older token after the claim read it " +
			"(or, under REPEATABLE READ or SERIALIZABLE, was writing it): nothing was claimed and the transaction is aborted; retry it (" + e.Err.Error() + ")"
	}
	return "fencedsql: claim on " + e.Table + " could not stamp every row its locking read locked (a concurrent transaction changed " +
		"them while it waited, under READ COMMITTED): nothing was claimed and the transaction is aborted; retry it (" + e.Err.Error() + ")"
}

func (e *ClaimConflictError) Unwrap() []error { return []error{ErrClaimConflict, e.Err} }

// DuplicateError is a unique-constraint violation. errors.Is(err, ErrDuplicate) holds
// and the driver's error stays reachable with errors.As.
//
// Error() starts with what the driver says about the violation, so code that matches
// the driver's text (ent's IsConstraintError, say) behaves as on the raw driver:
//
//	PostgreSQL      ERROR: duplicate key value violates unique constraint "c" (SQLSTATE 23505)
//	MySQL, MariaDB  Error 1062 (23000): Duplicate entry for key 'k'
//	SQLite          constraint failed: UNIQUE constraint failed: t.a, t.b (2067)
//
// then the wrapper's own words. Those driver words (Words) are the dialect's, rebuilt
// from their fixed text and the names (constraint, key, columns), never copied from the
// driver's message: the duplicated values never appear (MySQL's "Duplicate entry 'v'"
// quotes them, and PostgreSQL's DETAIL is left out). Without them (a dialect that
// gives none) the error starts with "fencedsql: write violates unique constraint".
//
// Code is the driver's SQLSTATE when it reports one through a SQLState() method
// (PostgreSQL: "23505"), so that error translators reading a Code field recognise the
// violation: GORM's PostgreSQL dialector with TranslateError then answers
// gorm.ErrDuplicatedKey as with the plain driver. (GORM's MySQL dialector only knows
// *mysql.MySQLError: test errors.Is(err, fencedsql.ErrDuplicate) there, see README.)
type DuplicateError struct {
	Table      string // when known
	Constraint string // index or constraint name (SQLite: the columns), when the driver reports it
	Code       string // the SQLSTATE, when the driver reports one ("23505" on PostgreSQL)
	Words      string // the driver's words for the violation, without values (dialect.ErrorInfo.Words)
	Err        error
}

func (e *DuplicateError) Error() string {
	msg := e.Words
	if msg == "" {
		msg = "fencedsql: write violates unique constraint"
		if e.Constraint != "" {
			msg += " " + e.Constraint
		}
	}
	msg += "; fencedsql: unique constraint violated"
	if e.Table != "" {
		msg += " on " + e.Table
	}
	return msg + " (the duplicated values are not shown)"
}

func (e *DuplicateError) Unwrap() []error { return []error{ErrDuplicate, e.Err} }

// sqlState is the SQLSTATE err reports through a SQLState() method (pgconn.PgError's),
// or "".
func sqlState(err error) string {
	var state interface{ SQLState() string }
	if errors.As(err, &state) {
		return state.SQLState()
	}
	return ""
}

// isSQLState reports whether s is five digits or upper-case letters.
func isSQLState(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return len(s) == 5
}

// UnsupportedError explains why a statement was refused. errors.Is(err, ErrUnsupported).
type UnsupportedError struct {
	Table  string // the guarded table, when known
	Reason string
}

func (e *UnsupportedError) Error() string {
	if e.Table != "" {
		return "fencedsql: statement on guarded table " + e.Table + " cannot be fenced: " + e.Reason
	}
	return "fencedsql: statement cannot be fenced: " + e.Reason
}

func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// NotSent reports that the statement was refused before anything reached the
// database. It lets a layer that does not import this package — a lock backend whose
// statements run on a fenced pool (lockclient/sqllock) — tell this refusal, which no
// retry passes, from a database that did not answer.
func (e *UnsupportedError) NotSent() bool { return true }

// LeaseServicesError names the two lock services whose leases were bound together
// (their lockclient.ServiceIdentifier names) and a token of each.
// errors.Is(err, ErrLeaseServicesDiffer).
type LeaseServicesError struct {
	First, Second           string // the two services' identities
	FirstToken, SecondToken uint64 // a lease's token of each
}

func (e *LeaseServicesError) Error() string {
	return fmt.Sprintf("fencedsql: nothing sent: leases of two lock services bound together (token %d of %q, token %d of %q): "+
		"tokens of two lock services do not compare; take every lock of one transaction from one lock service",
		e.FirstToken, e.First, e.SecondToken, e.Second)
}

func (e *LeaseServicesError) Unwrap() error { return ErrLeaseServicesDiffer }

// NotSent reports that the statement was refused before anything reached the
// database (see UnsupportedError.NotSent).
func (e *LeaseServicesError) NotSent() bool { return true }

// NoTokenError is returned for a guarded write, or a claim, without a usable token;
// Table is empty when a statement's binding is refused whatever it writes.
type NoTokenError struct {
	Table  string
	Reason string // e.g. "no token in context", "token 0"
}

func (e *NoTokenError) Error() string {
	if e.Table == "" {
		return "fencedsql: statement refused: " + e.Reason
	}
	return "fencedsql: write to guarded table " + e.Table + " refused: " + e.Reason
}

func (e *NoTokenError) Unwrap() error { return ErrNoToken }

// SchemaError reports what a guarded table (or the session) lacks, and the DDL that
// fixes it.
type SchemaError struct {
	Table   string
	Problem string
	Fix     string // DDL or setting that fixes it, when there is one
	Err     error  // the underlying error, if the check itself failed
}

// Error names the table, the problem, the underlying error when the check itself
// failed, and the fix when there is one.
func (e *SchemaError) Error() string {
	msg := "fencedsql: guarded table " + e.Table + ": " + e.Problem
	if e.Table == "" {
		msg = "fencedsql: " + e.Problem
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; fix: " + e.Fix
	}
	return msg
}

func (e *SchemaError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrSchema, e.Err}
	}
	return []error{ErrSchema}
}

// ConfigError reports a bad option or DSN parameter of this package.
type ConfigError struct {
	Msg string
	// Err is the error the refusal comes from, when there is one: a
	// *dialect.IncompleteError for a dialect that hides capabilities of the one it is
	// built on (WithDialect).
	Err error
}

func (e *ConfigError) Error() string { return "fencedsql: " + e.Msg }

// Unwrap returns Err.
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// asUnsupported returns the planner's *Refusal as an *UnsupportedError with the same fields
// (ErrUnsupported), any other error as it is: the one place where a refusal becomes
// this package's error.
func asUnsupported(err error) error {
	var r *plan.Refusal
	if errors.As(err, &r) {
		return &UnsupportedError{Table: r.Table, Reason: r.Reason}
	}
	return err
}
