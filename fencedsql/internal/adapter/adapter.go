// Package adapter is the seam between package fencedsql's fencing engine and the
// packages that fence a database API other than database/sql (fencedpgx, for pgx's
// native interface). It declares small interfaces and one hook; it holds no fencing
// logic of its own.
//
// The engine — the rewriter and its plan cache, argument binding, the token and
// transaction binding, the lazy schema and session checks, error mapping, metrics and
// span events — stays unexported in package fencedsql. fencedsql/adapter.go fills the
// hook New in its init function. A package that imports fencedsql (as it must, for the
// options, contexts and errors) therefore always finds New set.
//
// The native package supplies a database/sql/driver connection over its own connection
// (it should implement driver.ExecerContext, driver.QueryerContext, driver.ConnBeginTx
// and driver.ConnPrepareContext, and may expose a *pgx.Conn with a Conn() method for the
// session check), and Engine.Conn wraps it in the very connection wrapper that database/sql
// connections get: every statement goes through the same route, execPlan/queryPlan,
// twoStep, claim and mapErr as a database/sql statement. Results, rows and statements
// the native connection returns come back through the wrapper unchanged (Rows.Raw,
// Stmt.SQL), so the native package can hand its caller the native types.
package adapter

import (
	"context"
	"database/sql/driver"
)

// New is the one hook: it builds an Engine from options, which must be a
// []fencedsql.Option (typed any here, since this package cannot import fencedsql).
// Package fencedsql sets it in init (fencedsql/adapter.go).
var New func(options any) (Engine, error)

// Engine is one configured fencing engine (fencedsql's core): guarded tables, dialect,
// rewriter, plan cache, metrics. It is safe for concurrent use.
type Engine interface {
	// Conn wraps raw in fencedsql's connection wrapper. Like a driver connection, the
	// result is for one goroutine at a time.
	Conn(raw driver.Conn) Conn
	// Lookup plans sql (cached) and reports only the refusal, if any: the per-statement
	// cost of the engine before anything is sent. It does not run the first-use work
	// (Conn.Open): it is for benchmarks.
	Lookup(sql string, versioned bool) error
}

// Conn is fencedsql's wrapper around one native connection.
//
// Every method that sends a statement or decides what is guarded (Exec, Query, Begin,
// Prepare, Batch, CheckCopy) first runs the engine's first-use work through this
// connection unless it is done: what a database/sql pool does when it opens its first
// connection (fencedsql's core.open — the registries and the tables carrying the
// guard's triggers are guarded, the partitions, inheritance children and parents of
// every guarded table too, and a listed table that does not exist is refused). It runs
// once per Engine; a failure (ErrSchema) fails the call, sends nothing of it, and the
// work runs again at the next call.
type Conn interface {
	// Open runs the first-use work now, if not done yet (Ping's part).
	Open(ctx context.Context) error
	// CheckCopy refuses a bulk copy (COPY … FROM STDIN) into table (its name parts,
	// schema-qualified or not) when the table is guarded: *fencedsql.UnsupportedError,
	// counted and logged like any refused statement. nil for other tables.
	CheckCopy(ctx context.Context, table []string) error
	// Exec runs sql (fenced if it writes a guarded table). The result is the native
	// connection's (as its ExecContext returned it) for the statement that answers the
	// caller: the DELETE of a fenced DELETE, the caller's SELECT of a claimed read.
	Exec(ctx context.Context, sql string, args []driver.NamedValue) (driver.Result, error)
	// Query is Exec for statements that return rows.
	Query(ctx context.Context, sql string, args []driver.NamedValue) (Rows, error)
	// Begin begins a transaction on the native connection, bound to the token ctx
	// carries (WithLease, WithToken) exactly as database/sql's BeginTx is.
	Begin(ctx context.Context) (driver.Tx, error)
	// Prepare prepares sql: a guarded write is rewritten once, with the token as a
	// placeholder, so the statement serves every token.
	Prepare(ctx context.Context, sql string) (Stmt, error)
	// Batch fences sql for a pipelined batch: it returns the statements to queue in its
	// place, or the refusal (nothing may be sent). The batch must run as one
	// transaction (a batch is an implicit one) for a two-statement form (DELETE, a
	// claimed read) to be atomic. more reports that other statements of the same batch
	// follow sql: every statement of a batch is checked before anything is sent,
	// against the session as it is before the batch, so a statement that may change the
	// session or its name resolution (a SET, set_config, …) is refused
	// (*fencedsql.UnsupportedError) unless it is the batch's last. after reports that
	// statements of the same batch come before sql: one of them may change the session
	// from inside a function the wrapper cannot read, so a statement whose reading
	// depends on the session is refused unless it is the batch's first.
	Batch(ctx context.Context, sql string, args []driver.NamedValue, after, more bool) (Batched, error)
	// Reset forgets the connection's transaction binding (the connection returns to
	// a pool), as driver.SessionResetter does.
	Reset(ctx context.Context) error
	// Unwrapped tells the engine that the native connection was handed to the caller
	// (or may have run statements the engine did not see), as database/sql's
	// sql.Conn.Raw does: before the next guarded write the session check runs again,
	// reading afresh what the dialect kept (synchronous_commit), and the table checks
	// are made for this connection from then on (a SET search_path or a TEMP table
	// there may make a guarded name resolve to another table); the engine's own
	// prepared statements are dropped.
	Unwrapped()
	// Reacquired tells the engine that the native connection was acquired from a
	// pool whose hooks (pgxpool's PrepareConn, BeforeAcquire, AfterRelease) may have
	// run statements on it since its last use: before the next guarded write the
	// session check runs again and the connection's name resolution is compared with
	// the pool's again, as after database/sql's ResetSession (red-team rt44b F3).
	Reacquired()
	// SavepointRolledBack tells the engine that a savepoint of the open transaction was
	// rolled back by statements it did not plan (pgx's nested transaction sends ROLLBACK
	// TO SAVEPOINT itself): the server reverted the settings and name resolution set
	// since (PostgreSQL), so the checks made under them are re-armed, as at a ROLLBACK
	// TO sent through the engine.
	SavepointRolledBack()
	// Savepoint judges the binding of ctx for a savepoint (pgx's nested transaction)
	// about to be begun in the open transaction, as a statement's binding is judged:
	// its leases join the transaction's (checked by every later statement and the
	// Commit, the larger token carried), a lost one refuses with an error wrapping
	// lockclient.ErrLeaseLost (the transaction can then only roll back), a bare token
	// other than the transaction's with ErrUnsupported, leases with no usable token
	// with ErrNoToken. Nothing is sent; the refused savepoint must not be begun.
	Savepoint(ctx context.Context) error
}

// Rows are the rows of a Query, as fencedsql wraps them.
type Rows interface {
	// Raw returns the native connection's rows (as its QueryContext returned them),
	// for the caller to read.
	Raw() driver.Rows
	// MapErr maps an error the native rows reported while the caller read them, as
	// the wrapper maps every error (ErrFenced, ErrVersionConflict, ErrDuplicate).
	MapErr(err error) error
	// Close closes the native rows and returns their mapped error; for a guarded
	// statement it records the outcome (metrics, span event). Call it exactly once.
	Close() error
}

// Stmt is a statement prepared through Conn.Prepare.
type Stmt interface {
	Exec(ctx context.Context, args []driver.NamedValue) (driver.Result, error)
	Query(ctx context.Context, args []driver.NamedValue) (Rows, error)
	// NumInput is the caller's placeholder count (-1: unknown).
	NumInput() int
	// SQL is the text prepared for the statement whose results the caller sees: the
	// caller's own text, or its fenced rewrite.
	SQL() string
	Close() error
}

// RowCounter may be implemented by the rows a native connection's QueryContext
// returns, when its caller reads them natively rather than through the engine's
// rows (fencedpgx): once they are closed, RowsRead reports how many rows the
// statement returned (ok false when the native rows cannot say), and the engine
// judges that count where it must (a claimed read's rows against the rows claimed).
type RowCounter interface {
	RowsRead() (n int64, ok bool)
}

// Finished is implemented by the rows of a query the engine ran to its end itself and
// that return no row (a fenced DELETE without RETURNING sent as a query, which the
// wrapper runs as its DELETE statements): the native connection's rows do not exist,
// and the caller gets empty rows whose command is Command (e.g. "DELETE 1", in the
// server's command-tag form) instead.
type Finished interface {
	driver.Rows
	Command() string
}

// Step is one statement a batch must queue: its SQL and arguments in placeholder
// order.
type Step struct {
	SQL  string
	Args []driver.NamedValue
}

// Batched is one caller's statement fenced for a batch.
type Batched interface {
	// Steps are the statements to queue, in order: the caller's results are the last
	// one's.
	Steps() []Step
	// Done maps the error of step i (nil when it succeeded) as the wrapper maps every
	// error, judges the rows the step wrote or returned (n, from its command tag; -1
	// when unknown) where the statement's two steps must agree (a claimed read returns
	// the rows its claim stamped, as through Query), and records the statement's
	// outcome once it is known (the first error, or the last step). A statement whose
	// last step returns rows is done when they are closed.
	Done(i int, n int64, err error) error
}
