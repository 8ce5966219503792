package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// conn wraps one driver connection. It forwards every optional interface of the
// wrapped connection, the legacy driver.Execer and driver.Queryer included; where the
// wrapped one lacks an interface, the method behaves as database/sql does without it
// (driver.ErrSkip, a no-op Ping, …). Every path that runs SQL — ExecContext,
// QueryContext, Exec, Query, prepared statements, in a transaction or not — goes
// through the same rewrite (route), the same guarded-write functions (execPlan,
// queryPlan) and the same error mapping (mapErr). Raw returns the wrapped connection:
// see Unwrap.
type conn struct {
	raw  driver.Conn
	core *core

	execer    driver.ExecerContext
	queryer   driver.QueryerContext
	lexecer   driver.Execer  //nolint:staticcheck // legacy interface, forwarded
	lqueryer  driver.Queryer //nolint:staticcheck // legacy interface, forwarded
	preparer  driver.ConnPrepareContext
	beginner  driver.ConnBeginTx
	pinger    driver.Pinger
	resetter  driver.SessionResetter
	validator driver.Validator
	checker   driver.NamedValueChecker

	tx        *txState // the open transaction, nil outside one
	sessionOK bool     // the dialect's session check passed on this connection
	// roleOK: the session check's listing of the server's replication connections
	// (verifyRole) found none, or could not list them; made once per connection.
	roleOK bool
	// sessionDirty: the session has not been checked since the connection opened, or a
	// statement (or Raw) may have changed it since its check last ran, so a statement
	// planned on the lexer's reading of its text runs the check first (verifyReading).
	sessionDirty bool
	// namesMoved: a statement may have changed how this connection resolves table
	// names (resolvesNames), so its schema checks are cached in checkedNames, not on
	// the pool (docs/design.md G13).
	namesMoved   bool
	checkedNames map[*plan.Table]time.Time // when each was verified (WithSchemaRecheck)
	// namesEpoch counts rearmNames on this connection: a statement the application
	// prepared under an earlier count may have its forms bound to a name resolution
	// no longer in force (stmtnames.go).
	namesEpoch uint64
	// namesGen is the pool's names generation checkedNames were made under
	// (syncNames); poolNamesPending: a statement that may have moved a guarded name
	// for every connection was sent, and the pool's verdicts are dropped again at the
	// next statement (settlePoolNames, names.go).
	namesGen         uint64
	poolNamesPending bool
	// plansGen is the pool's names generation the statements c's session and driver
	// cached were analysed under; forgetPending: the dialect is to have them analysed
	// again before c's next statement, lostPending: and the driver's cache of them
	// dropped, the session may have lost some (followStatements, driverstatements.go).
	plansGen                   uint64
	forgetPending, lostPending bool
	// pathSeen: the connection's name resolution as it opened was compared with the
	// pool's (samePath, namepath.go).
	pathSeen bool
	// server is the identity of the server the connection reached ("" unknown), read
	// once with its name resolution (serverSeen: samePath); opener: the pool's
	// first-connection reads ran on it (open). See serverchange.go.
	server     string
	serverSeen bool
	opener     bool

	stmts *stmtCache // the wrapper's own prepared statements, nil when off (stmtcache.go)
	// claimSeq numbers the keyed statement pairs (claims, DELETEs) sent on this
	// connection: the nonce of the last (keyed.go); 0 before the first, which
	// defines their session variables.
	claimSeq int64
	// endFailed: a transaction end sent as the dialect's statement (endTx) failed, so
	// the session may still be inside the transaction: the pool discards the
	// connection (IsValid, ResetSession), which the server then rolls back.
	endFailed bool
	// strayTx: a statement that runs dynamic SQL outside a transaction of the wrapper
	// left the session inside one (watchDynamicOutside): the connection is discarded,
	// and every later statement on it answers driver.ErrBadConn, nothing sent.
	strayTx bool
}

type txState struct {
	token uint64 // 0: no token; raised by a lease joining it (otherBinding)
	// bound: begun under a binding (WithLease, WithLeases, WithToken), even one that
	// carries no usable token: its statements carry token, 0 refusing their guarded
	// writes and claims (statementToken).
	bound bool
	// begun is the token the transaction was bound to at BeginTx: its own binding's
	// statements keep being its statements after a joining lease raised token.
	begun  uint64
	leases []Lease
	// service is the lock service its leases name (leaseServices), "" when none
	// does; serviceTok a token of it. A statement's leases naming another one are
	// refused (checkLease).
	service    string
	serviceTok uint64
	// joined is the largest token of the leases statements joined to it (checkLease):
	// in a transaction begun without a binding, the least token its leased statements
	// carry (statementToken).
	joined uint64
	// provenN is how many of leases (a prefix: leases only join) were confirmed held
	// at their lock service after provenTok, the token they were last confirmed
	// against, came into existence (proveLeases); a lease joining, or a statement
	// carrying a larger token, makes checkLease confirm them again before it is sent.
	provenN   int
	provenTok uint64
	// sentTok is the largest token a statement of the transaction carried (noteTxToken);
	// manyTok that two statements carried different tokens. See txtoken.go.
	sentTok uint64
	manyTok bool
	// broken is why the transaction can only roll back (a two-statement write whose
	// second statement selected other rows, see exact.go); Commit returns it.
	broken error
	// ended is why the server already rolled the transaction back and left the session
	// in autocommit (a deadlock victim: serverrollback.go): later statements are
	// refused unsent, and Commit sends only a ROLLBACK and returns it.
	ended *serverRollbackError
	// movedSession, movedNames: a statement that may change the session settings
	// (plan.Plan.ResetsSession) or name resolution (ResetsNames) ran inside the
	// transaction; its end, or a rollback to a savepoint, may revert it (PostgreSQL):
	// the checks are re-armed then (conn.sessionReverted).
	movedSession, movedNames bool
	// movedPoolNames: DDL that may move a guarded name for every connection
	// (plan.Plan.ResetsPoolNames) ran inside the transaction: the pool's verdicts are
	// dropped again at its end, when the other connections see the change.
	movedPoolNames bool
	// dynMark is the savepoint set before a statement that runs dynamic SQL
	// (markDynamic), released after it (watchDynamic); "" for none.
	dynMark string
}

func newConn(raw driver.Conn, k *core) *conn {
	// sessionDirty: a new connection's settings (the DSN's, the server's defaults,
	// init_connect) are not known until its session check runs.
	c := &conn{raw: raw, core: k, stmts: newStmtCache(k.cfg.stmtCache), sessionDirty: true, plansGen: k.namesGen.Load()}
	c.execer, _ = raw.(driver.ExecerContext)
	c.queryer, _ = raw.(driver.QueryerContext)
	c.lexecer, _ = raw.(driver.Execer)   //nolint:staticcheck // legacy interface
	c.lqueryer, _ = raw.(driver.Queryer) //nolint:staticcheck // legacy interface
	c.preparer, _ = raw.(driver.ConnPrepareContext)
	c.beginner, _ = raw.(driver.ConnBeginTx)
	c.pinger, _ = raw.(driver.Pinger)
	c.resetter, _ = raw.(driver.SessionResetter)
	c.validator, _ = raw.(driver.Validator)
	c.checker, _ = raw.(driver.NamedValueChecker)
	return c
}

var (
	_ driver.Conn               = (*conn)(nil)
	_ driver.ConnPrepareContext = (*conn)(nil)
	_ driver.ConnBeginTx        = (*conn)(nil)
	_ driver.ExecerContext      = (*conn)(nil)
	_ driver.QueryerContext     = (*conn)(nil)
	_ driver.Execer             = (*conn)(nil) //nolint:staticcheck // legacy, forwarded
	_ driver.Queryer            = (*conn)(nil) //nolint:staticcheck // legacy, forwarded
	_ driver.Pinger             = (*conn)(nil)
	_ driver.SessionResetter    = (*conn)(nil)
	_ driver.Validator          = (*conn)(nil)
	_ driver.NamedValueChecker  = (*conn)(nil)
)

// Prepare implements driver.Conn.
func (c *conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Close implements driver.Conn.
func (c *conn) Close() error {
	c.dropStatements()
	return c.raw.Close()
}

// Begin implements driver.Conn.
func (c *conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx. A transaction begun with a context from
// WithLease, WithLeases or WithToken is bound to that token: its guarded writes carry it
// (a statement whose own context binds another bare token is refused with
// ErrUnsupported: it may be a statement of the *sql.Conn the transaction runs on; one
// carrying other leases joins them, see otherBinding), and its statements and Commit
// refuse once any of its leases is lost. One begun under a binding that carries no
// usable token (a nil lease: WithLeases) refuses its guarded writes and claims with
// ErrNoToken (statementToken). One begun under leases of two lock services is refused
// with a *LeaseServicesError (ErrLeaseServicesDiffer), nothing sent. A second BeginTx while a transaction is open on the
// connection is refused.
func (c *conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.strayTx {
		return nil, driver.ErrBadConn
	}
	if c.tx != nil {
		// database/sql lets a *sql.Conn begin again while its Tx is open. The second
		// BEGIN would commit the first transaction (MySQL/MariaDB) or join it (PostgreSQL
		// only warns), and the new binding would take over the first one's statements:
		// refused, nothing sent. A connection the driver knows dead answers as the
		// driver would (database/sql then discards it): its transaction, cancelled
		// with its context, may not be rolled back yet.
		if v, ok := c.raw.(driver.Validator); ok && !v.IsValid() {
			return nil, driver.ErrBadConn
		}
		return nil, &UnsupportedError{Reason: "a transaction is already open on this connection: commit or roll it back first"}
	}
	if b, ok := bindingFrom(ctx); ok {
		if b.mixed != nil {
			return nil, b.mixed // nothing sent
		}
		if cause := lostCauseAll(b.leases); cause != nil {
			return nil, lostErr("transaction not begun", cause)
		}
		if err := b.prove(ctx, "transaction not begun"); err != nil {
			return nil, err // nothing sent
		}
	}
	raw, err := c.rawBegin(ctx, opts)
	if err != nil {
		return nil, err
	}
	st := &txState{}
	if b, ok := bindingFrom(ctx); ok {
		st.token, st.begun, st.leases, st.bound = b.token, b.token, b.leases, true
		st.service, st.serviceTok = b.service, b.leaseTok
		st.provenN, st.provenTok = len(b.leases), b.token // confirmed by b.prove
	}
	c.tx = st
	return &tx{raw: raw, c: c, st: st, ctx: ctx}, nil
}

func (c *conn) rawBegin(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.beginner != nil {
		return c.beginner.BeginTx(ctx, opts)
	}
	if opts.Isolation != driver.IsolationLevel(0) || opts.ReadOnly {
		return nil, errors.New("fencedsql: the wrapped driver does not support transaction options")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.raw.Begin() //nolint:staticcheck // legacy fallback, as database/sql does
}

// PrepareContext implements driver.ConnPrepareContext. Statements that write no guarded
// table are prepared as they are, in a thin wrapper that only maps their errors like
// every other path's (see passStmt). A guarded write is rewritten
// once, with the token as a placeholder, so the prepared statement serves transactions
// with different tokens; its NumInput counts only the caller's placeholders.
func (c *conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	p, err := c.route(ctx, query) // the caller's deadline holds for the checks route runs (red-team rt44f F1)
	if err != nil {
		return nil, err
	}
	if p.Kind == plan.KindPass {
		st, err := c.rawPrepare(ctx, query)
		if err != nil {
			return nil, c.core.mapPassErr(p, err)
		}
		return c.rearmingStmt(p, newPassStmt(c, st, p, query)), nil
	}
	s := &stmt{c: c, text: query, plain: p, raws: map[*plan.Plan]driver.Stmt{}, epoch: c.namesEpoch}
	if err := s.prepareAll(ctx, p); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (c *conn) rawPrepare(ctx context.Context, query string) (driver.Stmt, error) {
	if c.preparer != nil {
		return c.preparer.PrepareContext(ctx, query)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.raw.Prepare(query)
}

// route plans query for a statement with ctx. A pass-through statement that changes
// the session's sql_mode re-arms the session check. A savepoint statement sent as text
// is refused outside a transaction the wrapper began (plan.Plan.TxOnly); prepared, it
// is judged when prepared and again at each execution (passStmt.refusedInTx: one
// prepared on a *sql.Conn inside a Tx outlives the Tx).
// A statement that commits implicitly (MySQL/MariaDB DDL, …: plan.Plan.ImplicitCommit)
// is refused inside one; prepared outside one, it is judged again at each execution
// (passStmt), since database/sql's tx.Stmt reuses a statement already prepared on the
// transaction's connection. While a listed table does not exist yet (WithDDL), a
// statement that may write rows is refused (checkMissing), and once the pool found a
// relative of a guarded table it does not guard, until it is reopened
// (checkRelativeBlock).
func (c *conn) route(ctx context.Context, query string) (*plan.Plan, error) {
	if c.strayTx {
		return nil, driver.ErrBadConn // the session was left in a transaction: watchDynamicOutside
	}
	c.settlePoolNames()
	c.followStatements(ctx)
	_, versioned := expectedVersion(ctx)
	p, err := c.core.plan(query, versioned)
	if err != nil {
		return nil, err
	}
	if err := c.admit(ctx, p, query); err != nil {
		return nil, err
	}
	return p, nil
}

// admit applies to p, the plan of query, the judgements that depend on the connection
// (route, above): route's for the caller's text, judgeBoundText's for the text with its
// bound statement text put in as literals.
func (c *conn) admit(ctx context.Context, p *plan.Plan, query string) error {
	if p.TxOnly != nil && c.tx == nil {
		return c.core.refused(p.TxOnly)
	}
	if p.ImplicitCommit != nil && c.tx != nil {
		return c.core.refused(p.ImplicitCommit)
	}
	if err := c.checkMissing(ctx, p, query); err != nil {
		return err
	}
	if err := c.checkRelativeBlock(p, query); err != nil {
		return err
	}
	if p.Ambiguous {
		if err := c.verifyReading(ctx); err != nil {
			return err
		}
	}
	if err := c.txTokenRefusal(p, query, false); err != nil {
		return err
	}
	c.sessionMoved(p)
	return nil
}

// ExecContext implements driver.ExecerContext.
func (c *conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.checkLease(ctx); err != nil {
		return nil, c.autocommitOutcome(err)
	}
	p, err := c.route(ctx, query)
	if err != nil {
		return nil, err
	}
	st := c.tx
	if p.Kind != plan.KindPass {
		if err := c.sendAhead(ctx, st, p); err != nil {
			return nil, err
		}
		res, err := c.guardedExec(ctx, connRunner{c}, p, args)
		return res, c.autocommitOutcome(c.watchDynamic(st, p, c.watchErr(st, err)))
	}
	if err := c.lockThrough(ctx, p); err != nil {
		return nil, err
	}
	if err := c.checkSend(ctx, p, query, args); err != nil {
		return nil, err
	}
	if err := c.judgeBoundText(ctx, p, query, args); err != nil {
		return nil, err
	}
	if err := c.sendAhead(ctx, st, p); err != nil {
		return nil, err
	}
	res, err := c.rawExec(ctx, query, args)
	return res, c.watchDynamic(st, p, c.watchErr(st, c.core.mapPassErr(p, err)))
}

// QueryContext implements driver.QueryerContext.
func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.checkLease(ctx); err != nil {
		return nil, c.autocommitOutcome(err)
	}
	p, err := c.route(ctx, query)
	if err != nil {
		return nil, err
	}
	st := c.tx
	if p.Kind != plan.KindPass {
		if err := c.sendAhead(ctx, st, p); err != nil {
			return nil, err
		}
		rows, err := c.guardedQuery(ctx, connRunner{c}, p, args)
		if err != nil {
			return nil, c.autocommitOutcome(c.watchDynamic(st, p, c.watchErr(st, err)))
		}
		return c.watchDynamicRows(st, p, c.watchRows(st, rows)), nil
	}
	if err := c.lockThrough(ctx, p); err != nil {
		return nil, err
	}
	if err := c.checkSend(ctx, p, query, args); err != nil {
		return nil, err
	}
	if err := c.judgeBoundText(ctx, p, query, args); err != nil {
		return nil, err
	}
	if err := c.sendAhead(ctx, st, p); err != nil {
		return nil, err
	}
	rows, err := c.rawQuery(ctx, query, args)
	if err != nil {
		return nil, c.watchDynamic(st, p, c.watchErr(st, c.core.mapPassErr(p, err)))
	}
	return c.watchDynamicRows(st, p, c.watchRows(st, newRows(rows, c.core, nil, 0, 0))), nil
}

// sendAhead sends, once per statement of plan p and after the judgements of its text,
// what the wrapper sends ahead of it: the transaction's token (recordTxToken), then the
// savepoint that marks the transaction st before a statement that runs dynamic SQL
// (markDynamic).
func (c *conn) sendAhead(ctx context.Context, st *txState, p *plan.Plan) error {
	if err := c.recordTxToken(ctx, p); err != nil {
		return err
	}
	return c.markDynamic(ctx, st, p)
}

// rawExec sends query as it is through the wrapped connection's ExecerContext, else
// its legacy Execer, else answers driver.ErrSkip (database/sql, or connRunner, then
// prepares the statement).
func (c *conn) rawExec(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.execer != nil {
		return c.execer.ExecContext(ctx, query, args)
	}
	if c.lexecer == nil {
		return nil, driver.ErrSkip
	}
	return viaLegacy(ctx, args, func(v []driver.Value) (driver.Result, error) { return c.lexecer.Exec(query, v) })
}

// rawQuery is rawExec for queries.
func (c *conn) rawQuery(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.queryer != nil {
		return c.queryer.QueryContext(ctx, query, args)
	}
	if c.lqueryer == nil {
		return nil, driver.ErrSkip
	}
	return viaLegacy(ctx, args, func(v []driver.Value) (driver.Rows, error) { return c.lqueryer.Query(query, v) })
}

// Ping implements driver.Pinger.
func (c *conn) Ping(ctx context.Context) error {
	if c.pinger == nil {
		return nil
	}
	return c.pinger.Ping(ctx)
}

// ResetSession implements driver.SessionResetter. database/sql calls it before it
// reuses a pooled connection; the driver's own ResetSession then runs, and with it
// whatever hook the driver runs on reuse (pgx's stdlib.OptionResetSession), unseen by
// the planner: the connection's session check and name-resolution comparison are
// re-armed (sessionReset, red-team rt44b F3).
func (c *conn) ResetSession(ctx context.Context) error {
	c.tx = nil
	if c.endFailed || c.strayTx {
		return driver.ErrBadConn
	}
	if c.resetter == nil {
		return nil
	}
	if err := c.resetter.ResetSession(ctx); err != nil {
		return err
	}
	c.sessionReset(false)
	return nil
}

// IsValid implements driver.Validator.
func (c *conn) IsValid() bool {
	if c.endFailed || c.strayTx {
		return false
	}
	if c.validator == nil {
		return true
	}
	return c.validator.IsValid()
}

// CheckNamedValue implements driver.NamedValueChecker by delegating to the wrapped
// connection (pgx accepts its own types this way); without one, database/sql's default
// conversion applies.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c.checker == nil {
		return driver.ErrSkip
	}
	return c.checker.CheckNamedValue(nv)
}

// runner executes the SQL of a plan: directly on the connection, or through the
// statements prepared for it. Both ask checkSend before they send.
type runner interface {
	exec(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (driver.Result, error)
	query(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error)
}

type connRunner struct{ c *conn }

func (r connRunner) exec(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	c := r.c
	if err := c.checkSend(ctx, p, p.SQL, args); err != nil {
		return nil, err
	}
	if res, err := c.rawExec(ctx, p.SQL, args); err != driver.ErrSkip {
		return res, err
	}
	// The driver wants a prepared statement (go-sql-driver/mysql without
	// interpolateParams): the connection's cached one, or one prepared now.
	cs, err := c.acquire(ctx, p.SQL)
	if err != nil {
		return nil, err
	}
	res, err := stmtExec(ctx, cs.st, args)
	if rerr := c.release(cs, err); err == nil && rerr != nil {
		return nil, rerr
	}
	return res, err
}

func (r connRunner) query(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error) {
	c := r.c
	if err := c.checkSend(ctx, p, p.SQL, args); err != nil {
		return nil, err
	}
	if rows, err := c.rawQuery(ctx, p.SQL, args); err != driver.ErrSkip {
		return rows, err
	}
	cs, err := c.acquire(ctx, p.SQL)
	if err != nil {
		return nil, err
	}
	rows, err := stmtQuery(ctx, cs.st, args)
	if err != nil {
		c.release(cs, err)
		return nil, err
	}
	return &closeStmtRows{Rows: rows, c: c, cs: cs}, nil
}
