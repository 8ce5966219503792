package fencedsql

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/internal/adapter"
)

// The engine, exposed to packages that fence a database API other than database/sql
// (fencedpgx) through the internal package adapter: this file fills its one hook,
// adapter.New. The adapter's connection is this package's conn over a driver.Conn the
// other package supplies, so every statement takes the same path as a database/sql
// statement (route, guardedExec/guardedQuery, execPlan/queryPlan, claim, twoStep,
// mapErr, observe); only Batch, which database/sql has no equivalent of, orders the
// same steps for a pipelined batch. No fencing logic lives here.

func init() { adapter.New = newAdapterEngine }

func newAdapterEngine(options any) (adapter.Engine, error) {
	opts, ok := options.([]Option)
	if !ok {
		return nil, configErr("adapter: options must be []fencedsql.Option, not %T", options)
	}
	k, err := newCore(opts)
	if err != nil {
		return nil, err
	}
	return adapterEngine{k}, nil
}

type adapterEngine struct{ k *core }

func (e adapterEngine) Conn(raw driver.Conn) adapter.Conn { return &adapterConn{c: newConn(raw, e.k)} }

func (e adapterEngine) Lookup(sql string, versioned bool) error {
	_, err := e.k.plan(sql, versioned)
	return err
}

// copyReason is the reason a bulk copy into a guarded table is refused.
const copyReason = "a bulk copy (COPY … FROM STDIN, pgx's CopyFrom) into a guarded table: copied rows carry no fencing token and no check; insert them with INSERT statements (a pgx.Batch of INSERTs is one round trip), or copy into an unguarded staging table and INSERT … SELECT from it"

// copyNULReason is the reason a bulk copy into a table whose name holds a NUL byte is
// refused: no table has such a name, and the driver would send another name than the
// one judged.
const copyNULReason = "a bulk copy into a table whose name holds a NUL byte: the driver drops the byte and copies into another table than the one named"

type adapterConn struct{ c *conn }

// open runs the pool's first-connection work (core.open: the records of what is
// guarded, the guarded tables' relatives, the listed tables' existence) through this
// connection, once per engine, before its first statement: a database/sql pool runs it
// from its connector, which the adapter's connections do not pass through. The fast
// path is one atomic load; done's store in core.open orders the rewriter it installs
// before every later read.
func (a *adapterConn) open(ctx context.Context) error {
	if a.c.core.first.done.Load() {
		return nil
	}
	return a.c.core.open(ctx, a.c)
}

func (a *adapterConn) Open(ctx context.Context) error { return a.open(ctx) }

func (a *adapterConn) CheckCopy(ctx context.Context, table []string) error {
	if err := a.open(ctx); err != nil {
		return err
	}
	// A lost lease (or a transaction the server ended) sends nothing, as for every
	// statement: the copy is a write like any other.
	if err := a.c.checkLease(ctx); err != nil {
		return err
	}
	if err := a.c.recordTxToken(ctx, nil); err != nil {
		return err
	}
	k := a.c.core
	for _, part := range table {
		if strings.ContainsRune(part, 0) {
			// pgx's Identifier.Sanitize drops NUL bytes, so the name sent would not be
			// the name looked up: acc\x00ounts copies into accounts (red-team rt40d F1).
			err := &UnsupportedError{Table: strings.ReplaceAll(strings.Join(table, "."), "\x00", `\x00`), Reason: copyNULReason}
			k.cfg.logger.WarnContext(ctx, "fencedsql: statement refused", "err", err.Error())
			return err
		}
	}
	g := k.rw.Lookup(table)
	if g == nil {
		return nil
	}
	err := &UnsupportedError{Table: g.String(), Reason: copyReason}
	k.cfg.logger.WarnContext(ctx, "fencedsql: statement refused", "err", err.Error())
	k.metrics.count(k.metrics.unsupported, g)
	return err
}

func (a *adapterConn) Exec(ctx context.Context, sql string, args []driver.NamedValue) (driver.Result, error) {
	if err := a.open(ctx); err != nil {
		return nil, err
	}
	return a.c.ExecContext(ctx, sql, args)
}

func (a *adapterConn) Query(ctx context.Context, sql string, args []driver.NamedValue) (adapter.Rows, error) {
	if err := a.open(ctx); err != nil {
		return nil, err
	}
	rs, err := a.c.QueryContext(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	return adapterRowsOf(rs), nil
}

func (a *adapterConn) Begin(ctx context.Context) (driver.Tx, error) {
	if err := a.open(ctx); err != nil {
		return nil, err
	}
	return a.c.BeginTx(ctx, driver.TxOptions{})
}

func (a *adapterConn) Reset(ctx context.Context) error { return a.c.ResetSession(ctx) }

// Unwrapped re-arms the connection exactly as conn.Raw does (unwrap.go).
func (a *adapterConn) Unwrapped() { _ = a.c.Raw() }

// Reacquired re-arms the connection as a reuse after a session-changing hook does
// (conn.sessionReset).
func (a *adapterConn) Reacquired() { a.c.sessionReset(true) }

// SavepointRolledBack re-arms what a statement of the open transaction may have moved
// (conn.sessionReverted), as a ROLLBACK TO sent as text does (conn.sessionMoved).
func (a *adapterConn) SavepointRolledBack() {
	if st := a.c.tx; st != nil {
		a.c.sessionReverted(st)
	}
}

// Savepoint judges a savepoint's binding as a statement's (checkLease).
func (a *adapterConn) Savepoint(ctx context.Context) error { return a.c.checkLease(ctx) }

func (a *adapterConn) Prepare(ctx context.Context, sql string) (adapter.Stmt, error) {
	if err := a.open(ctx); err != nil {
		return nil, err
	}
	st, err := a.c.PrepareContext(ctx, sql)
	if err != nil {
		return nil, err
	}
	return &adapterStmt{st: st, sql: sql}, nil
}

// adapterRows exposes the rows every query path returns (*rows) to the adapter.
type adapterRows struct {
	r   *rows       // nil if the path returned something else (then nothing is mapped)
	raw driver.Rows // the native rows
}

func adapterRowsOf(rs driver.Rows) *adapterRows {
	a := &adapterRows{raw: rs}
	if r, ok := rs.(*rows); ok {
		a.r = r
	}
	for { // peel this package's wrappers down to the native rows
		switch x := a.raw.(type) {
		case *rows:
			a.raw = x.Rows
			continue
		case *closeStmtRows:
			a.raw = x.Rows
			continue
		}
		return a
	}
}

func (a *adapterRows) Raw() driver.Rows { return a.raw }

func (a *adapterRows) MapErr(err error) error {
	if a.r == nil || err == nil {
		return err
	}
	return a.r.fail(a.r.core.mapErr(context.Background(), a.r.p, a.r.tok, a.r.ver, err))
}

func (a *adapterRows) Close() error {
	if a.r == nil {
		return a.raw.Close()
	}
	return a.r.Close()
}

type adapterStmt struct {
	st  driver.Stmt
	sql string
}

func (s *adapterStmt) Exec(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return stmtExec(ctx, s.st, args)
}

func (s *adapterStmt) Query(ctx context.Context, args []driver.NamedValue) (adapter.Rows, error) {
	rs, err := stmtQuery(ctx, s.st, args)
	if err != nil {
		return nil, err
	}
	return adapterRowsOf(rs), nil
}

func (s *adapterStmt) NumInput() int { return s.st.NumInput() }

func (s *adapterStmt) SQL() string {
	if g, ok := s.st.(*stmt); ok {
		return g.plain.SQL
	}
	return s.sql
}

func (s *adapterStmt) Close() error { return s.st.Close() }

// batchSessionReason is the reason a statement that may change the session, followed
// by others in one batch, is refused.
const batchSessionReason = "a statement that may change the session settings or name resolution (SET, RESET, set_config, …) followed by other statements in one batch: the wrapper checks every statement of a batch against the session as it was before the batch, but the server would run the later ones under the new setting; send the setting alone (Exec) or as the batch's last statement"

// batchReadingReason is the reason a statement whose reading depends on the session,
// after others in one batch, is refused.
const batchReadingReason = "a statement whose reading depends on the session (a backslash or a non-ASCII byte) after other statements in one batch: a statement before it may change the session from inside a function (set_config in a body the wrapper cannot read), and the server would read this one otherwise than the wrapper checked it; send it alone or as the batch's first statement"

// Batch fences one statement of a pipelined batch with the functions a statement sent
// alone goes through, in the same order: the lease check (checkLease: a lost lease
// sends nothing, and inside a transaction the statement's leases join it), route, the
// claim's judgement (claimOne → claimable: the planner's refusal, the row locator's
// verdict, the one-statement form; claimReadable), guardedArgs (token, binding, schema
// and session checks) for every step before anything is sent, and, as the results
// come back, each step's error mapped as execPlan maps it and the two steps of a
// claimed read or a DELETE judged against each other (exact). The batch is one
// implicit transaction, which stands for the transaction twoStep would begin and
// claimable asks for. A statement that may change the session or its name resolution
// (the plan's ResetsSession or ResetsNames, which re-arm the checks on the statement
// path: sessionMoved) is refused unless it is the batch's last (more false); a
// statement whose reading depends on the session (escapesOrNonASCII) unless it is the
// batch's first (after false): a statement before it may change the session from
// inside a function no text of the batch shows.
func (a *adapterConn) Batch(ctx context.Context, sql string, args []driver.NamedValue, after, more bool) (adapter.Batched, error) {
	if err := a.open(ctx); err != nil {
		return nil, err
	}
	c := a.c
	mark := c.txTokenNow()
	if err := c.checkLease(ctx); err != nil {
		return nil, c.autocommitOutcome(err)
	}
	record := !after || c.txTokenNow() != mark // txTokenNow
	p, err := c.route(ctx, sql)
	if err != nil {
		return nil, err
	}
	if err := c.txTokenRefusal(p, sql, more); err != nil {
		return nil, err // a savepoint statement followed by others, in a transaction of two tokens
	}
	if more && (p.ResetsSession || p.ResetsNames || p.ResetsPoolNames) {
		// Every statement of the batch is judged now, on the session as it is before
		// the batch (route's reading check, guardedArgs' session check), but the server
		// reads each one after the statements before it ran: after this one, the
		// statements that follow may read otherwise (standard_conforming_strings off
		// turns what the lexer took for a string into statement text) or resolve other
		// tables. Sent alone, the next statement is judged on the session this one left.
		return nil, c.core.refused(&UnsupportedError{Reason: batchSessionReason})
	}
	if after && escapesOrNonASCII(sql) {
		return nil, c.core.refused(&UnsupportedError{Reason: batchReadingReason})
	}
	if err := c.lockThrough(ctx, p); err != nil {
		return nil, err
	}
	if p.Kind == plan.KindPass || (p.Kind == plan.KindClaim && !c.hasToken(ctx)) {
		// Sent as written (a claim without a token is a plain locking read).
		if err := c.checkSend(ctx, p, sql, args); err != nil {
			return nil, err
		}
		if err := c.judgeBoundText(ctx, p, sql, args); err != nil {
			return nil, err
		}
		if record {
			if err := c.recordTxToken(ctx, p); err != nil {
				return nil, err
			}
		}
		return &batched{c: c, steps: []adapter.Step{{SQL: sql, Args: args}}, maps: []*plan.Plan{nil}}, nil
	}
	b := &batched{c: c, ctx: ctx, p: p, observed: true, tok: c.tokenOf(ctx), start: time.Now(), stamped: -1}
	fail := func(err error) (adapter.Batched, error) {
		c.core.observe(ctx, p, b.tok, b.start, err)
		return nil, err
	}
	b2, err := a.batchSteps(ctx, p, args, b)
	if err != nil {
		return fail(err)
	}
	// Every step is sent as it stands here: the driver's reading of each is checked
	// (checkSend) before any of the batch is.
	for _, st := range b2.steps {
		if err := c.checkSend(ctx, p, st.SQL, st.Args); err != nil {
			return fail(err)
		}
	}
	if record {
		if err := c.recordTxToken(ctx, p); err != nil {
			return fail(err)
		}
	}
	return b2, nil
}

// batchSteps builds the steps of a fenced statement of a batch (Batch).
func (a *adapterConn) batchSteps(ctx context.Context, p *plan.Plan, args []driver.NamedValue, b *batched) (*batched, error) {
	c := a.c
	if p.Kind == plan.KindClaim {
		one, tok, full, err := c.claimOne(ctx, p, args, true)
		if err != nil {
			return nil, err
		}
		if one != nil {
			// PostgreSQL's claim in one statement: it stamps the rows and returns them.
			b.tok = tok
			b.steps = []adapter.Step{{SQL: one.SQL, Args: full}}
			b.maps = []*plan.Plan{one}
			b.verdict = &c.core.claimOne
			return b, nil
		}
		// The claim, then the read restricted to the rows carrying the token, whose
		// rows are counted against the rows claimed: queryClaim's two statements.
		if err := c.claimReadable(p); err != nil {
			return nil, err
		}
		// PostgreSQL: keyed by row locator where the table allows (no nonce).
		pre, read, err := c.claimStatements(ctx, p, args)
		if err != nil {
			return nil, err
		}
		tok, _, preArgs, err := c.guardedArgs(ctx, pre, args)
		if err != nil {
			return nil, err
		}
		_, _, readArgs, err := c.guardedArgs(ctx, read, args)
		if err != nil {
			return nil, err
		}
		b.tok = tok
		b.steps = []adapter.Step{{SQL: pre.SQL, Args: preArgs}, {SQL: read.SQL, Args: readArgs}}
		b.maps = []*plan.Plan{pre, nil}
		b.exact, b.what = read, "locking SELECT"
		return b, nil
	}
	tok, ver, full, err := c.guardedArgs(ctx, p, args)
	if err != nil {
		return nil, err
	}
	b.tok, b.ver = tok, ver
	if p.Pre != nil {
		pre, del, preArgs, delArgs, err := c.twoStepArgs(ctx, p, args, tok, ver, full)
		if err != nil {
			return nil, err
		}
		b.steps = []adapter.Step{{SQL: pre.SQL, Args: preArgs}, {SQL: del.SQL, Args: delArgs}}
		b.maps = []*plan.Plan{pre, del}
		b.exact, b.what = del, "DELETE"
		return b, nil
	}
	b.steps = []adapter.Step{{SQL: p.SQL, Args: full}}
	b.maps = []*plan.Plan{p}
	return b, nil
}

type batched struct {
	c        *conn
	ctx      context.Context
	p        *plan.Plan
	steps    []adapter.Step
	maps     []*plan.Plan // per step: the plan its errors are mapped for (nil: as written)
	tok      uint64
	ver      int64
	start    time.Time
	observed bool // a guarded statement: its outcome is recorded
	recorded bool
	// verdict, when set, is the cache of the table verdict that allowed the batch's
	// one-statement form: a failure of that form drops it (doubtVerdict).
	verdict *sync.Map
	// exact, when set, is the plan of a two-step statement's second step (what names
	// it): its rows are judged against the rows the first step stamped (stamped, -1
	// while unknown).
	exact   *plan.Plan
	what    string
	stamped int64
}

func (b *batched) Steps() []adapter.Step { return b.steps }

func (b *batched) Done(i int, n int64, err error) error {
	if pl := b.maps[i]; pl != nil {
		err = b.c.core.mapErr(context.Background(), pl, b.tok, b.ver, err)
	} else {
		// As written; the read of a claim's two steps (exact) maps its lock wait as
		// the claim's (mapPassErr).
		err = b.c.core.mapPassErr(b.exact, err)
	}
	if b.verdict != nil {
		b.c.core.doubtVerdict(b.verdict, b.p.Guard, err)
	}
	if err == nil && b.exact != nil {
		switch {
		case i == 0:
			b.stamped = n
		case i == len(b.steps)-1 && b.stamped >= 0 && n >= 0:
			err = b.c.exact(b.exact, b.what, b.stamped, n)
		}
	}
	if b.observed && !b.recorded && (err != nil || i == len(b.steps)-1) {
		b.recorded = true
		b.c.core.observe(b.ctx, b.p, b.tok, b.start, err)
	}
	return err
}

// escapesOrNonASCII reports whether sql holds a byte a pipelined batch's session may
// read otherwise than the wrapper's lexer did: a backslash (PostgreSQL's
// standard_conforming_strings) or a byte of 0x80 and above (client_encoding). Batches
// are pgx's, so MySQL's ANSI_QUOTES, which makes a double quote ambiguous too, does
// not apply.
func escapesOrNonASCII(sql string) bool {
	for i := 0; i < len(sql); i++ {
		if c := sql[i]; c == '\\' || c >= 0x80 {
			return true
		}
	}
	return false
}
