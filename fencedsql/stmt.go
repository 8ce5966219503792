package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// stmt is a prepared guarded write. It holds the wrapped driver's prepared statements
// for the plan (and, for DELETE, its fencing UPDATE); the ExpectVersion variant is
// prepared on first use. The token is a placeholder, bound at execution. Its forms
// all belong to the connection's name resolution at execution: when it moved since
// they were prepared, they are prepared again (epoch, followNames: stmtnames.go).
type stmt struct {
	c     *conn
	text  string
	plain *plan.Plan
	raws  map[*plan.Plan]driver.Stmt
	// epoch is the connection's names epoch (conn.namesEpoch) the statements in raws
	// were prepared under.
	epoch uint64
}

var (
	_ driver.Stmt              = (*stmt)(nil)
	_ driver.StmtExecContext   = (*stmt)(nil)
	_ driver.StmtQueryContext  = (*stmt)(nil)
	_ driver.NamedValueChecker = (*stmt)(nil)
)

// prepareAll prepares p's statements on the wrapped connection. A guarded write's
// table is checked first (guardChecks, the checks its execution runs), so a table the
// rewrite does not fit is refused with the same typed error as on the Exec path, and
// nothing is sent to be prepared. A claimed locking read prepares only the caller's
// text, which runs as written without a token: its claim (the fencing UPDATE Pre, or
// the one-statement form, claim.go) is prepared on first use, after the checks its
// execution with a token runs, so preparing it neither fails on a table a read
// without a token does not need fit nor fails where PostgreSQL refuses the one
// statement (a rule on UPDATE).
func (s *stmt) prepareAll(ctx context.Context, p *plan.Plan) error {
	forms := []*plan.Plan{p.Pre, p}
	if p.Kind == plan.KindClaim {
		forms = []*plan.Plan{p}
	} else if err := s.c.guardChecks(ctx, p.Guard); err != nil {
		return err
	}
	for _, pl := range forms {
		if pl == nil || s.raws[pl] != nil {
			continue
		}
		st, err := s.c.rawPrepare(ctx, pl.SQL)
		if err != nil {
			return s.c.core.goneOrErr(p.Guard, err) // schemagone.go
		}
		s.raws[pl] = st
	}
	return nil
}

// Close implements driver.Stmt.
func (s *stmt) Close() error {
	var errs []error
	for _, st := range s.raws {
		errs = append(errs, st.Close())
	}
	clear(s.raws)
	return errors.Join(errs...)
}

// NumInput implements driver.Stmt: the caller's placeholders, not the ones fencing adds.
func (s *stmt) NumInput() int { return s.plain.NUser }

// Exec implements driver.Stmt.
func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

// Query implements driver.Stmt.
func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

func (s *stmt) planFor(ctx context.Context) (*plan.Plan, error) {
	if _, versioned := expectedVersion(ctx); !versioned {
		return s.plain, nil
	}
	p, err := s.c.core.plan(s.text, true)
	if err != nil {
		return nil, err
	}
	return p, s.prepareAll(ctx, p)
}

// enter runs the checks every execution of the statement starts with — the session not
// left in a transaction, the lease, no implicit commit inside a transaction — and
// returns the plan to run.
func (s *stmt) enter(ctx context.Context) (*plan.Plan, error) {
	if s.c.strayTx {
		return nil, driver.ErrBadConn // the session was left in a transaction: watchDynamicOutside
	}
	if err := s.c.checkLease(ctx); err != nil {
		return nil, s.c.autocommitOutcome(err)
	}
	if s.plain.ImplicitCommit != nil && s.c.tx != nil {
		return nil, s.c.core.refused(s.plain.ImplicitCommit)
	}
	s.c.followStatements(ctx)
	s.followNames()
	p, err := s.planFor(ctx)
	if err != nil {
		return nil, err
	}
	return p, s.c.syncTxToken(ctx, p, s.text, false)
}

// ExecContext implements driver.StmtExecContext.
func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	p, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	st := s.c.tx
	res, err := s.c.guardedExec(ctx, s, p, args)
	return res, s.c.autocommitOutcome(s.c.watchErr(st, err))
}

// QueryContext implements driver.StmtQueryContext.
func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	p, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	st := s.c.tx
	rows, err := s.c.guardedQuery(ctx, s, p, args)
	return s.c.watchRows(st, rows), s.c.autocommitOutcome(s.c.watchErr(st, err))
}

// CheckNamedValue implements driver.NamedValueChecker through the connection's.
func (s *stmt) CheckNamedValue(nv *driver.NamedValue) error { return s.c.CheckNamedValue(nv) }

// exec and query make stmt a runner over its prepared statements.
func (s *stmt) exec(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.checkSend(ctx, p, p.SQL, args); err != nil {
		return nil, err
	}
	st, err := s.prepared(ctx, p)
	if err != nil {
		return nil, err
	}
	return stmtExec(ctx, st, args)
}

func (s *stmt) query(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.checkSend(ctx, p, p.SQL, args); err != nil {
		return nil, err
	}
	st, err := s.prepared(ctx, p)
	if err != nil {
		return nil, err
	}
	return stmtQuery(ctx, st, args)
}

// prepared returns the wrapped driver's statement for p, preparing it on first use
// (a form chosen at execution, such as a DELETE's one-statement form).
func (s *stmt) prepared(ctx context.Context, p *plan.Plan) (driver.Stmt, error) {
	if st := s.raws[p]; st != nil {
		return st, nil
	}
	st, err := s.c.rawPrepare(ctx, p.SQL)
	if err != nil {
		return nil, err
	}
	s.raws[p] = st
	return st, nil
}

func stmtExec(ctx context.Context, st driver.Stmt, args []driver.NamedValue) (driver.Result, error) {
	if se, ok := st.(driver.StmtExecContext); ok {
		return se.ExecContext(ctx, args)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st.Exec(values(args)) //nolint:staticcheck // legacy fallback
}

func stmtQuery(ctx context.Context, st driver.Stmt, args []driver.NamedValue) (driver.Rows, error) {
	if sq, ok := st.(driver.StmtQueryContext); ok {
		return sq.QueryContext(ctx, args)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return st.Query(values(args)) //nolint:staticcheck // legacy fallback
}

func namedValues(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func values(args []driver.NamedValue) []driver.Value {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

// passStmt is a prepared statement that writes no guarded table. It runs the wrapped
// driver's statement as it is and only maps its errors as every other path does (a
// unique violation becomes *DuplicateError), so the error a caller sees does not
// depend on whether database/sql (or go-sql-driver/mysql's driver.ErrSkip) chose to
// prepare the statement. It forwards the statement's optional interfaces; where the
// wrapped one lacks one, it answers as database/sql would without it.
type passStmt struct {
	driver.Stmt
	c       *conn
	checker driver.NamedValueChecker
	// inTx is the refusal of the statement inside a transaction (plan.Plan.ImplicitCommit),
	// nil for none.
	inTx error
	// p is the statement's plan: its locking read through a view is judged at each
	// execution, with the token it carries then (conn.lockThrough).
	p *plan.Plan
	// text is the statement's text: once the pool is stopped by an unguarded relative
	// (relatives.go), an execution that may write rows is refused.
	text string
	// epoch is the connection's names epoch (conn.namesEpoch) Stmt was prepared under
	// (followNames, stmtnames.go).
	epoch uint64
}

// passStmtCC is a passStmt over a statement that implements the legacy
// driver.ColumnConverter: database/sql uses the converter only when the interface is
// there, so it is forwarded exactly when the wrapped statement has it.
type passStmtCC struct{ *passStmt }

var (
	_ driver.Stmt              = (*passStmt)(nil)
	_ driver.StmtExecContext   = (*passStmt)(nil)
	_ driver.StmtQueryContext  = (*passStmt)(nil)
	_ driver.NamedValueChecker = (*passStmt)(nil)
	_ driver.ColumnConverter   = passStmtCC{} //nolint:staticcheck // legacy, forwarded
)

func newPassStmt(c *conn, st driver.Stmt, p *plan.Plan, text string) driver.Stmt {
	s := &passStmt{Stmt: st, c: c, inTx: p.ImplicitCommit, p: p, text: text, epoch: c.namesEpoch}
	s.checker, _ = st.(driver.NamedValueChecker)
	if _, ok := st.(driver.ColumnConverter); ok { //nolint:staticcheck // legacy
		return passStmtCC{s}
	}
	return s
}

// ColumnConverter implements driver.ColumnConverter through the wrapped statement's.
func (s passStmtCC) ColumnConverter(idx int) driver.ValueConverter {
	return s.Stmt.(driver.ColumnConverter).ColumnConverter(idx) //nolint:staticcheck // legacy
}

// Raw returns the wrapped driver's statement. It is not fenced (it writes no guarded
// table anyway), and its errors are the driver's own.
func (s *passStmt) Raw() driver.Stmt { return s.Stmt }

// refusedInTx returns the statement's refusal when it would run inside a transaction
// it must not run in (plan.Plan.ImplicitCommit), or inside one the server already
// rolled back (txState.ended), or outside a transaction the wrapper began when it may
// run only inside one (plan.Plan.TxOnly: a savepoint statement prepared while a
// transaction was open and executed after it ended — a statement prepared on a
// *sql.Conn outlives its Tx; red-team rt28a F3), or when it is a locking read through
// a view over a guarded table that carries a token (conn.lockThrough), or when it may
// write rows and the pool is stopped by an unguarded relative (checkRelativeBlock); nil
// otherwise.
func (s *passStmt) refusedInTx(ctx context.Context) error {
	if s.c.strayTx {
		return driver.ErrBadConn // the session was left in a transaction: watchDynamicOutside
	}
	if err := s.c.checkRelativeBlock(s.p, s.text); err != nil {
		return err
	}
	if err := s.c.lockThrough(ctx, s.p); err != nil {
		return err
	}
	if s.c.tx == nil {
		if s.p != nil && s.p.TxOnly != nil {
			return s.c.core.refused(s.p.TxOnly)
		}
		return nil
	}
	if s.inTx != nil {
		return s.c.core.refused(s.inTx)
	}
	return s.c.txEnded()
}

// judge runs, before each execution, the checks of a pass-through statement whose
// bound values the wrapper reads (plan.Plan.TextClass: it runs dynamic SQL, or is
// DDL): the send check's refusal of driver option arguments (checkSend; red-team rt55e
// F2) and the judgement of its bound text (judgeBoundText).
func (s *passStmt) judge(ctx context.Context, args []driver.NamedValue) error {
	if s.p != nil && s.p.TextClass {
		if err := s.c.checkSend(ctx, s.p, s.text, args); err != nil {
			return err
		}
	}
	return s.c.judgeBoundText(ctx, s.p, s.text, args)
}

// Exec implements driver.Stmt: ExecContext without a deadline, as stmt.Exec.
func (s *passStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

// Query implements driver.Stmt: QueryContext without a deadline, as stmt.Query.
func (s *passStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

// before runs what every execution checks before it sends: the leases of the
// transaction or context (checkLease), the statement's place in a transaction
// (refusedInTx), its bound values (judge); a statement running dynamic SQL then marks
// its transaction; the transaction's token is recorded (sendAhead). It returns the transaction the outcome is watched on.
func (s *passStmt) before(ctx context.Context, args []driver.NamedValue) (*txState, error) {
	if err := s.c.checkLease(ctx); err != nil {
		return nil, s.c.autocommitOutcome(err)
	}
	if err := s.refusedInTx(ctx); err != nil {
		return nil, err
	}
	if err := s.c.txTokenRefusal(s.p, s.text, false); err != nil {
		return nil, err
	}
	s.c.followStatements(ctx)
	if err := s.followNames(ctx); err != nil {
		return nil, err
	}
	if err := s.judge(ctx, args); err != nil {
		return nil, err
	}
	st := s.c.tx
	if err := s.c.sendAhead(ctx, st, s.p); err != nil {
		return nil, err
	}
	return st, nil
}

// outcome maps an execution's error (mapPassErr) and watches what it means for the
// transaction st (watchErr, watchDynamic).
func (s *passStmt) outcome(st *txState, err error) error {
	return s.c.watchDynamic(st, s.p, s.c.watchErr(st, s.c.core.mapPassErr(s.p, err)))
}

// ExecContext implements driver.StmtExecContext.
func (s *passStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	st, err := s.before(ctx, args)
	if err != nil {
		return nil, err
	}
	res, err := stmtExec(ctx, s.Stmt, args)
	return res, s.outcome(st, err)
}

// QueryContext implements driver.StmtQueryContext.
func (s *passStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	st, err := s.before(ctx, args)
	if err != nil {
		return nil, err
	}
	rows, err := stmtQuery(ctx, s.Stmt, args)
	if err != nil {
		return nil, s.outcome(st, err)
	}
	return s.c.watchDynamicRows(st, s.p, s.c.watchRows(st, newRows(rows, s.c.core, nil, 0, 0))), nil
}

// CheckNamedValue implements driver.NamedValueChecker: the statement's own checker,
// else the connection's.
func (s *passStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if s.checker != nil {
		return s.checker.CheckNamedValue(nv)
	}
	return s.c.CheckNamedValue(nv)
}
