package fencedsql

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// A transaction the server rolled back. On MySQL/MariaDB, InnoDB rolls back the whole
// transaction of a deadlock victim (error 1213) — and of a lock wait timeout (1205)
// when the server runs with innodb_rollback_on_timeout — and the session goes on in
// autocommit: the caller's next statement "in the transaction" would commit on its own,
// and its Commit would answer success for writes the server already undid. The
// dialect's error classification says which errors do this (dialect.ErrorInfo.
// Rollback); the wrapper then marks the transaction ended (txState.ended): its later
// statements are refused unsent, and Commit sends only a ROLLBACK and returns an error
// (NotCommitted) that wraps the statement's. PostgreSQL needs none of this: a failed
// statement (a deadlock, 40P01, included) leaves the transaction aborted, the server
// refuses what follows (25P02) and answers COMMIT with a rollback.
//
// A transaction a dynamic statement left. Under WithDynamicSQL, a statement that runs
// SQL the wrapper cannot read (plan.Plan.Dynamic) can end the transaction and succeed:
// on MySQL/MariaDB a procedure or compound statement that commits, EXECUTE IMMEDIATE
// of COMMIT or DDL, a procedure whose handler swallowed the deadlock InnoDB rolled the
// transaction back for. After such a statement succeeds inside a transaction the
// wrapper asks the dialect's query (dialect.TxOpenQuerier) whether the connection is
// still inside one (watchDynamic); if not, it ends the transaction as above, except
// that the writes' outcome is Unknown (they may have been committed), which the
// statement, Commit and Rollback all report.

// rollbackQueryTimeout bounds the query that asks the server whether an error rolled
// back the whole transaction (dialect.RollbackIf).
const rollbackQueryTimeout = 10 * time.Second

// serverRollbackError is why a transaction ended: the server rolled it back when one
// of its statements failed with Err. errors.As still finds the driver's error (an ORM's
// "retry on deadlock" sees it). With Left set, Err is nil: a statement that runs
// dynamic SQL succeeded and the server was outside any transaction after it — it
// committed the transaction or the server rolled it back, which the wrapper cannot
// tell (see watchDynamic).
type serverRollbackError struct {
	Err  error
	Left bool
	// Replaced (with Left): the savepoint set before the dynamic statement
	// (dialect.TxMarker) was gone after it — the transaction ended inside the
	// statement, and the server may be inside another one the statement began.
	Replaced bool
}

func (e *serverRollbackError) Error() string {
	if e.Replaced {
		return "the transaction ended inside a statement that runs dynamic SQL (CALL, EXECUTE, a compound statement): the savepoint the wrapper set before it was gone after it, so a procedure or dynamic statement committed or rolled back the transaction's writes (and may have begun another transaction, which the wrapper rolls back), " +
			"and the wrapper cannot tell which; the statements after it would have run in a transaction that is not the wrapper's: look in the database before retrying"
	}
	if e.Left {
		return "the transaction ended inside a statement that runs dynamic SQL (CALL, EXECUTE, a compound statement): the server was outside any transaction after it, so a procedure or dynamic statement committed the transaction's writes, " +
			"or the server rolled them back (a deadlock a handler swallowed), and the wrapper cannot tell which; " +
			"the statements after it would have run outside any transaction: look in the database before retrying"
	}
	return "the server rolled back the transaction when a statement failed (" + e.Err.Error() +
		"); the statements after it would have run outside any transaction: roll back and retry the whole transaction"
}

// outcome is the outcome of the transaction's writes: NotCommitted after a server
// rollback, Unknown after a dynamic statement left the transaction.
func (e *serverRollbackError) outcome() Outcome {
	if e.Left {
		return Unknown
	}
	return NotCommitted
}

func (e *serverRollbackError) Unwrap() error { return e.Err }

// txEndedError refuses a statement of a transaction the server rolled back: nothing
// was sent. errors.Is(err, ErrUnsupported) holds, and errors.As finds the driver's
// error that ended the transaction.
type txEndedError struct{ ended *serverRollbackError }

func (e *txEndedError) Error() string { return "fencedsql: statement not sent: " + e.ended.Error() }

func (e *txEndedError) Unwrap() []error { return []error{ErrUnsupported, e.ended} }

// txEnded returns the refusal of a statement in a transaction the server rolled back,
// nil when there is none.
func (c *conn) txEnded() error {
	if c.tx == nil || c.tx.ended == nil {
		return nil
	}
	c.core.metrics.count(c.core.metrics.unsupported, nil)
	return &txEndedError{ended: c.tx.ended}
}

// watchErr judges err, the error of a statement that ran inside st (the open
// transaction when it started, nil for none): an error after which the server rolled
// the whole transaction back ends st (txState.ended); one that says the session lost a
// prepared statement has the driver's forgotten before the next statement
// (noteLost). It returns err.
func (c *conn) watchErr(st *txState, err error) error {
	c.noteLost(err)
	if err == nil || st == nil || st.ended != nil || c.tx != st || err == driver.ErrSkip {
		return err
	}
	info := c.core.dialect.Classify(err)
	switch info.Rollback {
	case dialect.RollbackTransaction:
	case dialect.RollbackIf:
		if !c.rolledBackByServer(info.RollbackQuery) {
			return err
		}
	default:
		return err
	}
	st.ended = &serverRollbackError{Err: err}
	c.core.cfg.logger.Warn("fencedsql: the server rolled back the transaction; its later statements are refused", "err", err.Error())
	return err
}

// watchRows makes the rows of a query run inside st judge, when they close, the first
// error they reported (watchErr): a deadlock can be reported while rows stream.
func (c *conn) watchRows(st *txState, r driver.Rows) driver.Rows {
	w, ok := r.(*rows)
	if !ok || st == nil {
		return r
	}
	w.onDone(func(err error) { _ = c.watchErr(st, err) })
	return w
}

// rolledBackByServer runs q (dialect.ErrorInfo.RollbackQuery) on the connection: true
// unless it answers 0 or OFF. With no q, it asks the dialect's TxProber whether the
// connection is still in a transaction (SQLite); true for a dialect without one. An
// error counts as rolled back: the transaction can only roll back then.
func (c *conn) rolledBackByServer(q string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackQueryTimeout)
	defer cancel()
	if q == "" {
		p, ok := c.core.dialect.(dialect.TxProber)
		if !ok {
			return true
		}
		open, err := p.InTransaction(ctx, c.execString)
		return err != nil || !open
	}
	rows, err := c.queryStrings(ctx, q, nil)
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 {
		return true
	}
	v := strings.TrimSpace(rows[0][0])
	return !(v == "0" || strings.EqualFold(v, "OFF"))
}

// watchDynamic judges a statement of plan p that ran inside st (the open transaction
// when it started) and answered err (the error already judged by watchErr). When p
// runs dynamic SQL allowed by WithDynamicSQL (plan.Plan.Dynamic) and succeeded, and
// the dialect can tell (dialect.TxOpenQuerier: MySQL/MariaDB), it asks the server
// whether the connection is still inside a transaction: one round trip, after such
// statements only. If it is not, st ends (txState.ended, Left) — later statements are
// refused unsent, Commit and Rollback send only a ROLLBACK and report the writes'
// outcome Unknown — and the statement returns that error (outcome Unknown too).
//
// Where the dialect can mark its transaction (dialect.TxMarker: MySQL/MariaDB), a
// savepoint set before the statement (markDynamic) is released first: when the
// release fails the transaction ended inside the statement, even if the server is
// inside a transaction again (a procedure's COMMIT or ROLLBACK, then START
// TRANSACTION: red-team rt28a F1), and st ends the same way. Outside a transaction,
// see watchDynamicOutside.
func (c *conn) watchDynamic(st *txState, p *plan.Plan, err error) error {
	if p == nil || !p.Dynamic || errors.Is(err, driver.ErrBadConn) {
		return err
	}
	if st == nil {
		return c.watchDynamicOutside(p, err)
	}
	mark := st.dynMark
	st.dynMark = ""
	if st.ended != nil || c.tx != st {
		return err
	}
	if m, ok := c.core.dialect.(dialect.TxMarker); ok && mark != "" {
		ctx, cancel := context.WithTimeout(context.Background(), rollbackQueryTimeout)
		_, release := m.MarkStatements(mark)
		rerr := c.execString(ctx, release)
		cancel()
		if rerr != nil {
			st.ended = &serverRollbackError{Left: true, Replaced: true}
			c.core.cfg.logger.Warn("fencedsql: a dynamic statement ended the transaction (its savepoint is gone); its later statements are refused", "err", rerr.Error())
			if err != nil {
				return withOutcomeAs(fmt.Errorf("fencedsql: %w (the statement failed: %w)", st.ended, err), Unknown)
			}
			return withOutcomeAs(fmt.Errorf("fencedsql: %w", st.ended), Unknown)
		}
	}
	// A failed statement is asked about too: a procedure may COMMIT and then fail (a
	// SIGNAL after it), leaving the session in autocommit (red-team rt12f F2).
	q, ok := c.core.dialect.(dialect.TxOpenQuerier)
	if !ok || c.inTransaction(q.TxOpenQuery()) {
		return err
	}
	st.ended = &serverRollbackError{Left: true}
	c.core.cfg.logger.Warn("fencedsql: a dynamic statement ended the transaction; its later statements are refused", "err", st.ended.Error())
	if err != nil {
		return withOutcomeAs(fmt.Errorf("fencedsql: %w (the statement failed: %w)", st.ended, err), Unknown)
	}
	return withOutcomeAs(fmt.Errorf("fencedsql: %w", st.ended), Unknown)
}

// markDynamic sets, before a statement of plan p that runs dynamic SQL is sent inside
// st, the savepoint watchDynamic releases after it (dialect.TxMarker). An error means
// the statement must not be sent.
func (c *conn) markDynamic(ctx context.Context, st *txState, p *plan.Plan) error {
	if p == nil || !p.Dynamic || st == nil || st.ended != nil || c.tx != st {
		return nil
	}
	m, ok := c.core.dialect.(dialect.TxMarker)
	if !ok {
		return nil
	}
	name := dynMarkName()
	set, _ := m.MarkStatements(name)
	if err := c.execString(ctx, set); err != nil {
		return fmt.Errorf("fencedsql: statement not sent: the savepoint that marks the transaction before a statement that runs dynamic SQL failed: %w", err)
	}
	st.dynMark = name
	return nil
}

// strayTxError fails a statement that runs dynamic SQL, sent outside a transaction of
// the wrapper, after which the server was inside a transaction (a procedure that runs
// START TRANSACTION: red-team rt28a F2). The wrapper rolled that transaction back
// (or could not tell: Probe) and the connection is discarded: later statements on it
// answer driver.ErrBadConn. errors.Is(err, ErrUnsupported) holds; the outcome is
// Unknown (what the statement wrote before it began the transaction is committed, what
// it wrote after is rolled back).
type strayTxError struct {
	Err   error // the statement's own error, if any
	Probe error // the probe itself failed: the session's state is unknown
}

func (e *strayTxError) Error() string {
	msg := "fencedsql: a statement that runs dynamic SQL (CALL, EXECUTE, a compound statement), sent outside a transaction, left the session inside one the wrapper did not begin: it was rolled back and the connection is discarded; " +
		"what the statement wrote before it began the transaction is committed, what it wrote after is not: run such procedures inside a transaction (BeginTx), or make them leave none open"
	if e.Probe != nil {
		msg = "fencedsql: after a statement that runs dynamic SQL, sent outside a transaction, the wrapper could not tell whether the session is inside a transaction (" + e.Probe.Error() + "): the connection is discarded"
	}
	if e.Err != nil {
		msg += " (the statement failed: " + e.Err.Error() + ")"
	}
	return msg
}

func (e *strayTxError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrUnsupported, e.Err}
	}
	return []error{ErrUnsupported}
}

// watchDynamicOutside judges a statement of plan p that runs dynamic SQL and was sent
// outside any transaction of the wrapper (err: its error): where the dialect marks
// transactions (dialect.TxMarker), a savepoint is set and released — the release
// succeeds only when the statement left the session inside a transaction, which would
// hold the next autocommit writes uncommitted (committed later, by whatever ends it,
// past any lease check). That transaction is rolled back, the connection marked
// (strayTx: discarded by database/sql, every later statement on it refused with
// driver.ErrBadConn), and the statement fails (*strayTxError, outcome Unknown).
func (c *conn) watchDynamicOutside(p *plan.Plan, err error) error {
	m, ok := c.core.dialect.(dialect.TxMarker)
	if !ok || c.tx != nil || c.strayTx {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), rollbackQueryTimeout)
	defer cancel()
	set, release := m.MarkStatements(dynMarkName())
	if serr := c.execString(ctx, set); serr != nil {
		c.strayTx = true
		_ = c.execString(ctx, "ROLLBACK")
		return withOutcomeAs(&strayTxError{Err: err, Probe: serr}, Unknown)
	}
	if rerr := c.execString(ctx, release); rerr != nil {
		return err // in autocommit: the savepoint ended with its statement
	}
	c.strayTx = true
	_ = c.execString(ctx, "ROLLBACK")
	c.core.cfg.logger.Warn("fencedsql: a dynamic statement outside a transaction left the session inside one: rolled back, connection discarded")
	return withOutcomeAs(&strayTxError{Err: err}, Unknown)
}

// watchDynamicRows makes the rows of a query of plan p run inside st judge, when they
// close (with an error or without), whether the transaction is still open (watchDynamic): a CALL's
// result sets must be read before anything else is sent on the connection. Outside a
// transaction (st nil) the rows judge whether the statement left one open
// (watchDynamicOutside): the rows' error is not changed, but the connection is
// discarded then, and its next statement answers driver.ErrBadConn.
func (c *conn) watchDynamicRows(st *txState, p *plan.Plan, r driver.Rows) driver.Rows {
	w, ok := r.(*rows)
	if !ok || p == nil || !p.Dynamic {
		return r
	}
	w.onDone(func(err error) { _ = c.watchDynamic(st, p, err) })
	return w
}

// inTransaction runs q (dialect.TxOpenQuerier) on the connection: false when it
// answers 0 or OFF, fails, or answers other than one value.
func (c *conn) inTransaction(q string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), rollbackQueryTimeout)
	defer cancel()
	rows, err := c.queryStrings(ctx, q, nil)
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 {
		return false
	}
	v := strings.TrimSpace(rows[0][0])
	return !(v == "0" || strings.EqualFold(v, "OFF"))
}

// execString sends q, without arguments, as it is on the wrapped connection (a
// dialect.TxProber's probe).
func (c *conn) execString(ctx context.Context, q string) error {
	_, err := c.rawExec(ctx, q, nil)
	if err != driver.ErrSkip {
		return err
	}
	cs, err := c.acquireOnce(ctx, q)
	if err != nil {
		return err
	}
	_, err = stmtExec(ctx, cs.st, nil)
	if cerr := c.release(cs, err); err == nil {
		err = cerr
	}
	return err
}

// dynMarkName names a savepoint that marks a transaction around a dynamic statement:
// fencedsql_dyn_ and 64 random bits, so that the procedure the statement runs cannot
// name it (a COMMIT, START TRANSACTION and a SAVEPOINT of the same name had passed for
// the wrapper's transaction: red-team rt30a F4).
func dynMarkName() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("fencedsql: crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	return "fencedsql_dyn_" + hex.EncodeToString(b[:])
}
