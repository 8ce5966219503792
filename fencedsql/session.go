package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// SessionError is a session refused by the dialect's session check: a setting with
// which the server would read statements differently from the wrapper's lexer, or
// would not fail a fenced write. errors.Is(err, ErrSchema) holds. Nothing was sent.
type SessionError struct {
	Dialect string // "postgres", "mysql"
	Setting string // the setting, e.g. "sql_mode", "client_encoding"
	Value   string // its value in the session
	Problem string // why the wrapper cannot trust it
	Fix     string // the setting that fixes it
	// Reading reports a setting that changes how the server reads statement text (not
	// only how a fenced write fails): statements the wrapper would pass through on its
	// lexer's reading are refused too.
	Reading bool
	// Records reports a setting that changes the rows the wrapper's own catalog reads
	// return (MySQL's sql_select_limit, character_set_results; see
	// dialect.RecordsSessionChecker): a pool whose first connection has it does not
	// open, and it is refused whatever the schema check says.
	Records bool
	// NotPrimary reports a server that is not a writable primary (a replica, a
	// read_only server: red-team rt42f F2): errors.Is(err, ErrNotPrimary) holds.
	NotPrimary bool
}

func (e *SessionError) Error() string {
	msg := "fencedsql: session not fit for fencing: " + e.Setting + " = '" + e.Value + "': " + e.Problem
	if e.Fix != "" {
		msg += "; fix: " + e.Fix
	}
	return msg
}

// Unwrap returns ErrSchema, and ErrNotPrimary too when NotPrimary is set.
func (e *SessionError) Unwrap() []error {
	if e.NotPrimary {
		return []error{ErrSchema, ErrNotPrimary}
	}
	return []error{ErrSchema}
}

// verifySession runs the dialect's session check before a guarded write (see
// dialect.SessionTracker for when it costs a round trip). query false
// (WithSchemaCheck(false)) checks only the settings that change how the server reads
// statement text (sessionReadingOnly); the tracked check sends no query and always
// runs whole.
func (c *conn) verifySession(ctx context.Context, query bool) error {
	d := c.core.dialect
	q := d.SessionQuery()
	if q == "" {
		return nil
	}
	tracker, tracks := d.(dialect.SessionTracker)
	if tracks {
		if v, ok := tracker.TrackedSession(ctx, c.raw); ok {
			err := d.CheckSession(v)
			if err == nil && query {
				err = c.verifyRole(ctx) // once per connection (red-team rt50c F3)
			}
			return err
		}
	}
	if !query {
		return c.sessionReadingOnly(ctx)
	}
	if !tracks && c.sessionOK {
		return nil
	}
	vals, err := c.queryStrings(ctx, q, nil)
	if err != nil {
		return checkQueryErr(ctx, c.core.dialect, "", "the session check query failed", err)
	}
	if len(vals) != 1 || len(vals[0]) != 1 {
		return &SchemaError{Problem: "the session check query did not return one value" + mockHint}
	}
	err = d.CheckSession(vals[0][0])
	if err == nil {
		err = c.verifyRole(ctx)
	}
	if err == nil || !isReadingError(err) {
		c.sessionDirty = false // what the check found holds until the session moves again
	}
	if err != nil {
		return err
	}
	c.sessionOK = !tracks
	return nil
}

// verifyReading runs the dialect's session check before a statement the wrapper
// passes through on its lexer's reading of a text a session may read otherwise
// (plan.Plan.Ambiguous: it names a guarded table, a guard object or a protected
// setting, or starts with a keyword judged whatever it names, and holds a backslash, a
// double quote or a byte of 0x80 and above): a session that reads text differently (PostgreSQL
// standard_conforming_strings off or a client-only encoding, MySQL ANSI_QUOTES,
// NO_BACKSLASH_ESCAPES or a client character set with other byte classes) could hide a
// write in what the lexer took for a string. Only a SessionError with Reading fails the
// statement: a session unfit only for writes (non-strict sql_mode, synchronous_commit
// off) still reads. Where the dialect tracks the session (pgx) the check is free and
// always runs, and where it could but the driver's connection is out of reach its query
// runs before every such statement; otherwise it sends its query only after a
// statement that may have changed the session (sessionDirty). With the lazy schema
// checks off, sessionReadingOnly (the query only once the session may have moved).
func (c *conn) verifyReading(ctx context.Context) error {
	d := c.core.dialect
	if t, ok := d.(dialect.SessionTracker); ok {
		if v, ok := t.TrackedSession(ctx, c.raw); ok {
			if err := d.CheckSession(v); isReadingError(err) {
				return err
			}
			return nil
		}
	}
	// A tracking dialect whose driver connection the wrapper cannot reach (an
	// instrumentation wrapper below it that hides it) is not told of a change such as
	// SELECT set_config(…): its query runs before every such statement.
	if d.SessionQuery() == "" {
		return nil
	}
	if !c.core.cfg.schemaCheck {
		return c.sessionReadingOnly(ctx)
	}
	if _, tracks := d.(dialect.SessionTracker); !tracks && !c.sessionDirty {
		return nil
	}
	if err := c.verifySession(ctx, true); isReadingError(err) || err != nil && !isSessionError(err) {
		return err
	}
	return nil
}

// sessionReadingOnly is the session check of a pool with the schema check off
// (WithSchemaCheck(false)) where the dialect's session is not tracked without a query
// (MySQL/MariaDB; PostgreSQL under a driver other than pgx): the settings that change
// how the server reads statement text (SessionError.Reading: MySQL's ANSI_QUOTES,
// NO_BACKSLASH_ESCAPES and the modes that imply them, character_set_client) are
// checked whatever the option says, as pgx's tracked settings are on PostgreSQL
// (red-team rt34d F4: with ANSI_QUOTES, UPDATE "accounts" was a write to a string to
// the lexer, and went out unfenced). The query runs as the full check's does — once per
// connection, and again after a statement that may have changed the session
// (sessionDirty) — never per statement; the other findings of the check (a non-strict
// sql_mode, sql_log_bin …) are what the option turns off. A query that fails (a mock
// driver answers none) is logged and not asked again until the session moves: the
// option exists for mocks; a database that answers is obeyed.
func (c *conn) sessionReadingOnly(ctx context.Context) error {
	d := c.core.dialect
	if !c.sessionDirty || d.SessionQuery() == "" {
		return nil
	}
	vals, err := c.queryStrings(ctx, d.SessionQuery(), nil)
	if err == nil && (len(vals) != 1 || len(vals[0]) != 1) {
		err = errors.New("the session check query did not return one value")
	}
	if err != nil {
		c.sessionDirty = false
		c.core.cfg.logger.WarnContext(ctx, "fencedsql: the session check query failed; with the schema check off the pool goes on", "error", err.Error())
		return nil
	}
	if err := d.CheckSession(vals[0][0]); isReadingError(err) || isRecordsError(err) {
		return err
	}
	c.sessionDirty = false
	return nil
}

// isReadingError reports whether err is a SessionError about how the server reads
// statement text.
func isReadingError(err error) bool {
	var se *SessionError
	return errors.As(err, &se) && se.Reading
}

// isRecordsError reports whether err is a SessionError about a setting that changes
// the rows of the wrapper's own catalog reads (SessionError.Records).
func isRecordsError(err error) bool {
	var se *SessionError
	return errors.As(err, &se) && se.Records
}

func isSessionError(err error) bool {
	var se *SessionError
	return errors.As(err, &se)
}

// sessionMoved re-arms what p, a statement about to run on c, may invalidate: the
// session check after one that may change the settings it checks (SET … sql_mode),
// reading afresh what a tracking dialect kept (dialect.SessionForgetter:
// synchronous_commit under pgx), the schema checks after one that may change name
// resolution (SET search_path, SET ROLE, USE, ATTACH …), and either empties the
// connection's prepared statements.
//
// Inside a transaction it also remembers that such a statement ran (txState.
// movedSession, movedNames): PostgreSQL reverts SET, SET LOCAL and SET ROLE when the
// transaction or the savepoint they ran in ends — no statement the wrapper plans —
// so the checks made since are re-armed again then (sessionReverted): at the
// transaction's end (tx.end) and at a savepoint statement sent as text (p.TxOnly:
// ROLLBACK TO, RELEASE, SAVEPOINT) or by fencedpgx (a savepoint's Rollback). Only a
// connection on which such a statement ran pays for it.
func (c *conn) sessionMoved(p *plan.Plan) {
	c.rearm(p.ResetsSession, p.ResetsNames)
	c.poolNamesMoved(p)
	c.statementsDropped(p)
	if st := c.tx; st != nil {
		if p.TxOnly != nil {
			c.sessionReverted(st)
		}
		st.movedSession = st.movedSession || p.ResetsSession
		st.movedNames = st.movedNames || p.ResetsNames
	}
}

// sessionReverted re-arms, on c, the checks that a statement run inside st may have
// made under settings or a name resolution the server has since reverted (the end of
// st, or a rollback to one of its savepoints): see sessionMoved. Nothing is done for
// a transaction in which no such statement ran.
func (c *conn) sessionReverted(st *txState) {
	c.rearm(st.movedSession, st.movedNames)
	if st.movedPoolNames {
		c.core.forgetNames()
	}
}

// rearm re-arms c's session check (session: reading afresh what a tracking dialect
// kept, and emptying the prepared statements) and its per-connection name checks
// (names).
func (c *conn) rearm(session, names bool) {
	if session {
		c.sessionOK = false
		c.sessionDirty = true
		c.forgetTrackedSession()
		c.dropStatements()
	}
	if names {
		c.rearmNames()
	}
}

// sessionReset re-arms c after code the planner did not see may have changed its
// session between two uses: the driver's ResetSession on reuse (force false), or a
// pool's acquire and release hooks (force true: fencedpgx over a pgxpool with
// PrepareConn, BeforeAcquire or AfterRelease). A hook there may set search_path —
// the usual "schema per tenant, set at acquire" — or synchronous_commit, and the
// verdicts read before it would cover a session they were not made for (red-team
// rt44b F3: a guarded name then resolved to another schema's table with nullable
// fencing columns, and a stale write stored the fencing NULL there). So the session
// check runs again before the next guarded write (one query where the dialect reads
// settings per connection: synchronous_commit and the name path on PostgreSQL under
// pgx, the session query on MySQL/MariaDB), and so does the comparison of the
// connection's name resolution with the pool's (samePath): a connection that then
// resolves names otherwise caches its table checks on itself; one whose names had
// moved already has them checked again. Nothing is re-armed when the dialect knows
// that the driver's ResetSession runs no code that can change the session
// (dialect.ResetJudge: go-sql-driver/mysql's; pgx's without an OptionResetSession
// hook; either bare or under otelsql's layer only — any other driver wrapper layer may
// run its own ResetSession, red-team rt45c F5, F6), so a pool without such a hook pays
// nothing per reuse.
func (c *conn) sessionReset(force bool) {
	if j, ok := c.core.dialect.(dialect.ResetJudge); ok && !force && j.ResetKeepsSession(c.raw) {
		return
	}
	c.sessionOK = false
	c.sessionDirty = true
	c.forgetTrackedSession()
	if c.namesMoved {
		c.rearmNames()
	} else {
		c.pathSeen = false
	}
}

// forgetTrackedSession drops what a tracking dialect kept of c's session from a read
// of its own (dialect.SessionForgetter), so that the next session check reads it again.
func (c *conn) forgetTrackedSession() {
	if f, ok := c.core.dialect.(dialect.SessionForgetter); ok {
		f.ForgetTrackedSession(c.raw)
	}
}

// rearmNames re-arms the schema checks of c after a statement that may have changed
// its name resolution: from now on they are cached on c, not on the pool. It also
// moves c's names epoch on, so that the application's prepared statements on c prepare
// their forms again before their next execution (stmtnames.go).
func (c *conn) rearmNames() {
	c.namesMoved = true
	c.namesEpoch++
	clear(c.checkedNames)
	c.dropStatements()
}

// rearmingStmt returns st, prepared on c for plan p, wrapped so that each execution
// re-arms the session check when p may change the session (a prepared SET executed
// later: the wrapper does not see its text again) or is a savepoint statement (a
// prepared ROLLBACK TO may revert a SET run since it was prepared); other statements
// are returned as they are.
func (c *conn) rearmingStmt(p *plan.Plan, st driver.Stmt) driver.Stmt {
	if p == nil || !p.ResetsSession && !p.ResetsNames && !p.ResetsPoolNames && !p.DropsStatements && p.TxOnly == nil || st == nil {
		return st
	}
	s := &sessionStmt{Stmt: st, c: c, p: p}
	if _, ok := st.(driver.ColumnConverter); ok { //nolint:staticcheck // legacy, forwarded
		return sessionStmtCC{s}
	}
	return s
}

// sessionStmt is a prepared statement that may change the session: every execution
// re-arms the connection's session check. It forwards the statement's optional
// interfaces as passStmt does.
type sessionStmt struct {
	driver.Stmt
	c *conn
	p *plan.Plan
}

// sessionStmtCC forwards driver.ColumnConverter exactly when the statement has it.
type sessionStmtCC struct{ *sessionStmt }

var (
	_ driver.Stmt              = (*sessionStmt)(nil)
	_ driver.StmtExecContext   = (*sessionStmt)(nil)
	_ driver.StmtQueryContext  = (*sessionStmt)(nil)
	_ driver.NamedValueChecker = (*sessionStmt)(nil)
	_ driver.ColumnConverter   = sessionStmtCC{} //nolint:staticcheck // legacy, forwarded
)

// ColumnConverter implements driver.ColumnConverter through the wrapped statement's.
func (s sessionStmtCC) ColumnConverter(idx int) driver.ValueConverter {
	return s.Stmt.(driver.ColumnConverter).ColumnConverter(idx) //nolint:staticcheck // legacy
}

// Raw returns the wrapped statement.
func (s *sessionStmt) Raw() driver.Stmt { return s.Stmt }

func (s *sessionStmt) rearm() { s.c.sessionMoved(s.p) }

// Exec implements driver.Stmt.
func (s *sessionStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.rearm()
	defer s.c.statementsDropped(s.p)
	return s.Stmt.Exec(args) //nolint:staticcheck // legacy, forwarded
}

// Query implements driver.Stmt.
func (s *sessionStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.rearm()
	defer s.c.statementsDropped(s.p)
	return s.Stmt.Query(args) //nolint:staticcheck // legacy, forwarded
}

// ExecContext implements driver.StmtExecContext.
func (s *sessionStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.rearm()
	defer s.c.statementsDropped(s.p)
	return stmtExec(ctx, s.Stmt, args)
}

// QueryContext implements driver.StmtQueryContext.
func (s *sessionStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.rearm()
	defer s.c.statementsDropped(s.p)
	return stmtQuery(ctx, s.Stmt, args)
}

// CheckNamedValue implements driver.NamedValueChecker: the statement's own checker,
// else the connection's.
func (s *sessionStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}
