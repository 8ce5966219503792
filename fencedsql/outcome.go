package fencedsql

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Outcome is what an error from Commit, or from a guarded write outside a transaction,
// says about the transaction's fate. See the package documentation's table.
type Outcome uint8

const (
	// Committed: the error is nil.
	Committed Outcome = iota
	// NotCommitted: nothing the transaction (or autocommit write) did is in the
	// database; retrying is safe.
	NotCommitted
	// Unknown: the transaction may or may not have committed (the connection was lost
	// while COMMIT was in flight, or the error is not one the wrapper can judge). Look
	// in the database before retrying: see the idempotency recipe in the package doc.
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case Committed:
		return "committed"
	case NotCommitted:
		return "not committed"
	case Unknown:
		return "unknown"
	}
	return "Outcome(?)"
}

var (
	// ErrNotCommitted is wrapped by every error of Commit, and of a guarded write
	// outside a transaction, after which nothing of that transaction is in the database
	// — but for a write's server error that the wrapper does not type itself (a foreign
	// key, a CHECK constraint, an unknown column: the driver's *pgconn.PgError or
	// *mysql.MySQLError), which is returned as the driver returned it, so that type
	// assertions and ORMs' error translators see it as on the plain driver (red-team
	// rt43d F2). CommitOutcome classifies that error NotCommitted: test with
	// CommitOutcome rather than errors.Is.
	ErrNotCommitted = errors.New("fencedsql: not committed")
	// ErrCommitUnknown is wrapped by the errors of Commit, and of a guarded write
	// outside a transaction, that report a lost connection (or a context that ended)
	// while the request was in flight: the transaction may have committed or not. An
	// error the wrapper cannot judge is returned unchanged and is Unknown too: test
	// with CommitOutcome, or treat every error that does not wrap ErrNotCommitted as
	// possibly committed.
	ErrCommitUnknown = errors.New("fencedsql: commit outcome unknown")
)

// CommitOutcome classifies err, an error returned by Tx.Commit or by a write outside a
// transaction. Errors the wrapper returned carry ErrNotCommitted or ErrCommitUnknown
// (errors.Is) and are classified by it, but for a write's server error the wrapper
// returns as the driver returned it (see ErrNotCommitted); that one, and other errors
// (database/sql's own, such as sql.ErrTxDone, or errors of a plain connection), are
// classified by the same rules as far as they can be, and Unknown otherwise: the safe
// answer when in doubt. A server's error is recognised by its SQLSTATE method
// (PostgreSQL) or by the dialect of a driver name registered with Register — every
// dialect package registers one (MySQL/MariaDB: the error packets the dialect calls a
// server's answer).
func CommitOutcome(err error) Outcome {
	switch {
	case err == nil:
		return Committed
	case errors.Is(err, ErrCommitUnknown):
		return Unknown
	case errors.Is(err, ErrNotCommitted):
		return NotCommitted
	}
	return classifyOutcome(nil, err)
}

// outcomeError adds ErrNotCommitted or ErrCommitUnknown to an error without changing
// its text or hiding what it wraps.
type outcomeError struct {
	err     error
	outcome error // ErrNotCommitted or ErrCommitUnknown
}

func (e *outcomeError) Error() string   { return e.err.Error() }
func (e *outcomeError) Unwrap() []error { return []error{e.err, e.outcome} }

// withOutcome wraps err with its outcome, judged with dialect d (nil: without one).
// driver.ErrSkip, which database/sql compares by identity, is returned unchanged.
// An error it cannot judge (neither a refusal, nor a server's answer, nor a lost
// connection) is returned unchanged, identity included: CommitOutcome calls it Unknown.
// So is a server's answer CommitOutcome classifies NotCommitted by itself
// (keepsDriverError).
func withOutcome(d dialect.Dialect, err error) error {
	o := classifyOutcome(d, err)
	if o == Unknown && !connLost(d, err) || o == NotCommitted && keepsDriverError(d, err) {
		return err
	}
	return withOutcomeAs(err, o)
}

// keepsDriverError reports whether err, an error of a statement after which nothing
// was committed, may be returned as it is, without ErrNotCommitted: it is a server's
// answer that the wrapper does not type itself (not one of ownRefusal's errors: a
// foreign key, a CHECK constraint, an unknown column, a lock wait timeout…), and
// CommitOutcome, which has no dialect to ask but those Register registered, classifies
// it NotCommitted as well. The caller's type assertion (err.(*pgconn.PgError), what
// GORM's dialectors do with TranslateError, red-team rt43d F2) then sees the driver's
// error as on the plain driver and as inside a transaction, and the outcome stays
// known. A server error of a dialect CommitOutcome does not know (a pool of OpenDB or
// Wrap with a dialect no name was registered with) keeps ErrNotCommitted.
func keepsDriverError(d dialect.Dialect, err error) bool {
	return err != nil && !ownRefusal(err) && isServerError(d, err) && CommitOutcome(err) == NotCommitted
}

// withOutcomeAs wraps err with the outcome o (Committed leaves it unchanged).
func withOutcomeAs(err error, o Outcome) error {
	if err == nil || err == driver.ErrSkip || errors.Is(err, ErrNotCommitted) || errors.Is(err, ErrCommitUnknown) {
		return err
	}
	switch o {
	case NotCommitted:
		return &outcomeError{err: err, outcome: ErrNotCommitted}
	case Unknown:
		return &outcomeError{err: err, outcome: ErrCommitUnknown}
	}
	return err
}

// classifyOutcome is the table of the package doc. Transport failures come first: an
// error that wraps both a refusal and a lost connection is Unknown.
func classifyOutcome(d dialect.Dialect, err error) Outcome {
	switch {
	case err == nil:
		return Committed
	case errors.As(err, new(*CheckCutError)):
		// A check before the statement was sent could not complete (a context that
		// ended, a lost connection): nothing of it was sent.
		return NotCommitted
	case connLost(d, err):
		return Unknown
	case errors.Is(err, sql.ErrTxDone):
		// database/sql answers every Commit of a Tx already done without asking the
		// driver: after its context ended (rolled back), but also after an earlier
		// Commit that committed or whose outcome was Unknown (red-team rt43e F3).
		return Unknown
	case ownRefusal(err):
		return NotCommitted
	case isServerError(d, err):
		return NotCommitted
	}
	return Unknown
}

// ownRefusal reports the errors the wrapper types itself after which nothing was
// committed: its refusals and the database-side guard's. (sql.ErrTxDone is not one:
// classifyOutcome answers it Unknown.)
func ownRefusal(err error) bool {
	return errors.Is(err, lockclient.ErrLeaseLost) || // refused before sending
		errors.Is(err, ErrFenced) || errors.Is(err, ErrVersionConflict) || errors.Is(err, ErrDuplicate) ||
		errors.Is(err, ErrGuard) || errors.Is(err, ErrNoToken) || errors.Is(err, ErrUnsupported) ||
		errors.Is(err, ErrSchema)
}

// rollbackReported is the text of pgx's ErrTxCommitRollback: PostgreSQL answered COMMIT
// of a failed transaction with ROLLBACK. Matched by text to keep pgx out of this
// package's imports; TestCommitOutcomePostgres shows it is what pgx returns.
const rollbackReported = "commit unexpectedly resulted in rollback"

// isServerError reports an error the server answered with (so the statement, or
// COMMIT, was refused and its transaction rolled back): a PostgreSQL error (SQLSTATE),
// a COMMIT answered by ROLLBACK, or an error the dialect classifies (a kind, or
// ErrorInfo.Server: MySQL's error packets) — with d nil (CommitOutcome), one of the
// dialects Register registered.
//
// PostgreSQL's classes 08 (connection exception), 57 (operator intervention: a backend
// terminated while it waited for a synchronous standby has already committed
// locally), 58 (system error) and XX (internal error) are not counted: Unknown.
func isServerError(d dialect.Dialect, err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) && len(st.SQLState()) == 5 {
		switch st.SQLState()[:2] {
		case "08", "57", "58", "XX":
			return false
		}
		return true
	}
	if strings.Contains(err.Error(), rollbackReported) {
		return true
	}
	if d != nil {
		return serverClassified(d, err)
	}
	for _, rd := range dialect.Registered() {
		if serverClassified(rd, err) {
			return true
		}
	}
	return false
}

// answeredByServer reports an error the server sent as its answer to a statement: any
// SQLSTATE, a COMMIT answered by ROLLBACK, or an error dialect d classifies as the
// server's. Unlike isServerError, which judges whether a COMMIT took effect, it counts
// PostgreSQL's classes 08, 57, 58 and XX too: a statement cancelled (57014), a backend
// terminated (57P01) or failed is answered, and a database that aborts the transaction
// on an error (dialect.TxAborter) has aborted it, or ended the session, with it.
func answeredByServer(d dialect.Dialect, err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) && len(st.SQLState()) == 5 {
		return true
	}
	return isServerError(d, err)
}

// serverClassified reports an error dialect d classifies as a server's answer.
func serverClassified(d dialect.Dialect, err error) bool {
	info := d.Classify(err)
	return info.Kind != dialect.ErrorOther || info.Server
}

// autocommitOutcome adds the outcome to the error of a statement outside a
// transaction (its own, or the one the wrapper opens around a fenced DELETE, commits
// or fails with it); inside one, statement errors are returned as they are and Commit
// tells the outcome.
func (c *conn) autocommitOutcome(err error) error {
	if err == nil || c.tx != nil {
		return err
	}
	return withOutcome(c.core.dialect, err)
}
