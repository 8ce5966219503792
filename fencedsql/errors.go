package fencedsql

import (
	"errors"
	"fmt"
	"strconv"
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

	// ErrGuard means the database-side guard (the dialects' Guarder triggers) refused a
	// write that did not follow the fencing protocol: an UPDATE that lowers the token or
	// does not advance the version, a DELETE the transaction did not fence first, a
	// TRUNCATE. Nothing changed. Through the wrapper it comes from SQL the wrapper could
	// not fence itself (dynamic SQL allowed with WithDynamicSQL, a function called from a
	// read); outside it, classify a driver error with AsGuardError. To change guarded
	// rows outside application code, see Maintain.
	ErrGuard = errors.New("fencedsql: write refused by the database-side guard")
)

// guardHint is the advice every GuardError carries.
const guardHint = "write through the fenced driver with a lease from the application's lock service (fencedsql.Maintain for administrative changes), or remove the guard"

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
func AsGuardError(d Dialect, err error) error {
	if err == nil || d == nil {
		return err
	}
	switch info := d.Classify(err); info.Kind {
	case ErrorGuard:
		return &GuardError{Table: info.Table, Hint: guardHint, Err: err}
	case ErrorBelowFloor:
		return &BelowFloorError{Table: info.Table, Err: err}
	}
	return err
}

// FencedError is returned when the database refused a write because a targeted row
// carries a newer token. errors.Is(err, ErrFenced) holds.
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

// DuplicateError is a unique-constraint violation. Its message names the constraint
// (when the driver reports it) and never the duplicated values.
type DuplicateError struct {
	Table      string // when known
	Constraint string // index or constraint name, when the driver reports it
	Err        error
}

func (e *DuplicateError) Error() string {
	msg := "fencedsql: unique constraint violated"
	if e.Constraint != "" {
		msg += ": " + e.Constraint
	}
	if e.Table != "" {
		msg += " on " + e.Table
	}
	return msg
}

func (e *DuplicateError) Unwrap() []error { return []error{ErrDuplicate, e.Err} }

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

// NoTokenError is returned for a guarded write without a token.
type NoTokenError struct {
	Table  string
	Reason string // e.g. "no token in context", "token 0"
}

func (e *NoTokenError) Error() string {
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
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return "fencedsql: " + e.Msg }

func configErr(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}
