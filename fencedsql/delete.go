package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// execDelete runs a fenced DELETE sent with Exec: as one statement where the table's
// guard accepts it (oneStep), else as the fencing UPDATE and the DELETE (twoStep).
func (c *conn) execDelete(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (driver.Result, error) {
	ok, err := c.deleteFenced(ctx, p)
	if err != nil {
		return nil, err
	}
	if ok {
		res, err := c.oneStep(ctx, r, p.One, args, tok)
		if err == nil || !c.fenceWithdrawn(ctx, p, err) {
			return res, err
		}
		// The guard changed under the verdict (the fence function dropped, an older
		// guard installed): the one statement failed whole, so send the two.
	}
	return c.twoStep(ctx, r, p, args, tok, ver, full)
}

// fenceWithdrawn reports whether err, the failure of p's one-statement form, is the
// guard's one-statement support going away under the pool's verdict, so that the
// two statements may be sent instead: outside a transaction only (the failed
// statement changed nothing, and nothing of the caller's is lost with it), not for a
// fencing refusal or a lost connection, and only when DeleteFenceQuery, asked again,
// now says no.
func (c *conn) fenceWithdrawn(ctx context.Context, p *plan.Plan, err error) bool {
	if c.tx != nil || errors.Is(err, ErrFenced) || errors.Is(err, ErrBelowFloor) || connLost(c.core.dialect, err) || ctx.Err() != nil {
		return false
	}
	ok, qerr := c.deleteFenced(ctx, p)
	return qerr == nil && !ok
}

// deleteFenced reports whether p's one-statement form may be sent on this connection:
// the plan has one, the lazy schema checks run (WithSchemaCheck), and the table's
// dialect.DeleteFencer verdict (tableVerdict) is yes.
func (c *conn) deleteFenced(ctx context.Context, p *plan.Plan) (bool, error) {
	if p.One == nil || !c.core.cfg.schemaCheck {
		return false, nil
	}
	f, ok := c.core.dialect.(dialect.DeleteFencer)
	if !ok {
		return false, nil
	}
	return c.tableVerdict(ctx, &c.core.deleteFence, p.Guard, "delete-fence", f.DeleteFenceQuery)
}

// oneStep runs a DELETE's one-statement form (plan.Plan.One): one round trip, no
// transaction of its own (the statement is atomic). It returns one row per deleted
// row: the wrapper executes it (the driver's count) or, where the driver's Exec cannot
// count them (dialect.DeleteFencer.DeleteFenceExec), queries it and counts the rows. A
// row with a newer token fails the statement with the token column's NOT NULL
// violation, mapped to ErrFenced.
func (c *conn) oneStep(ctx context.Context, r runner, one *plan.Plan, args []driver.NamedValue, tok uint64) (driver.Result, error) {
	full, err := bind(one, args, tok, 0)
	if err != nil {
		return nil, err
	}
	var res driver.Result
	if f, _ := c.core.dialect.(dialect.DeleteFencer); f != nil && f.DeleteFenceExec() {
		res, err = r.exec(ctx, one, full) // the driver's own result (fencedpgx: its command tag)
	} else {
		var rows driver.Rows
		if rows, err = r.query(ctx, one, full); err == nil {
			var n int64
			n, err = drain(rows)
			res = counted(n)
		}
	}
	if err != nil {
		lost := c.core.dialect.Classify(err).Kind == dialect.ErrorMarkLost
		err = c.core.mapErr(ctx, one, tok, 0, err)
		if lost {
			// The table's triggers missed the mark (a user's trigger changed what
			// identifies the statement): the form cannot work on this table, whatever
			// DeleteFenceQuery says (it may not see the user's triggers).
			c.core.deleteFence.Store(one.Guard, verdict{final: true})
		} else {
			c.core.doubtVerdict(&c.core.deleteFence, one.Guard, err)
		}
		return nil, err
	}
	return res, nil
}

// oneStepQuery runs the one-statement form of a DELETE … RETURNING (plan.Plan.One): one
// round trip, atomic, no transaction of its own. Its rows are the caller's RETURNING
// list over the deleted rows as they were stored, the dialect's check column
// (plan.Plan.Hidden) dropped. A row with a newer token fails the statement (ErrFenced),
// before the first row on PostgreSQL, which runs a DELETE … RETURNING to completion
// first, or while the rows stream on MariaDB (the statement is undone whole either
// way). The table's verdict is judged on the statement's error as oneStep does.
func (c *conn) oneStepQuery(ctx context.Context, r runner, one *plan.Plan, args []driver.NamedValue, tok uint64) (driver.Rows, error) {
	full, err := bind(one, args, tok, 0)
	if err != nil {
		return nil, err
	}
	judge := func(err error) {
		if c.core.dialect.Classify(err).Kind == dialect.ErrorMarkLost {
			c.core.deleteFence.Store(one.Guard, verdict{final: true}) // as oneStep
			return
		}
		c.core.doubtVerdict(&c.core.deleteFence, one.Guard, err)
	}
	dr, err := r.query(ctx, one, full)
	if err != nil {
		judge(err)
		return nil, c.core.mapErr(ctx, one, tok, 0, err)
	}
	if one.Hidden > 0 {
		dr = &hiddenCols{Rows: dr, hidden: one.Hidden}
	}
	w := newRows(dr, c.core, one, tok, 0).(*rows)
	w.onDone(func(err error) {
		if err != nil {
			judge(err)
		}
	})
	return w, nil
}

// noRows are the rows of a statement that returns none (a DELETE without RETURNING
// sent with Query): no columns, and no row; n rows were deleted (adapter.Finished,
// for fencedpgx, whose callers read the command tag).
type noRows struct{ n int64 }

func (noRows) Columns() []string              { return nil }
func (noRows) Close() error                   { return nil }
func (noRows) Next(dest []driver.Value) error { return io.EOF }
func (r noRows) Command() string              { return "DELETE " + strconv.FormatInt(r.n, 10) }

// counted is the result of a statement the wrapper ran as a read of the rows it
// changed or locked (a DELETE … RETURNING, a claimed locking read sent with Exec): how
// many rows, and no insert id (0, as MySQL reports for a DELETE; neither inserts).
type counted int64

func (d counted) LastInsertId() (int64, error) { return 0, nil }
func (d counted) RowsAffected() (int64, error) { return int64(d), nil }

// drain reads rows to their end and closes them, returning how many there were.
func drain(rows driver.Rows) (int64, error) {
	dest := make([]driver.Value, len(rows.Columns()))
	var n int64
	for {
		err := rows.Next(dest)
		if err == io.EOF {
			return n, rows.Close()
		}
		if err != nil {
			_ = rows.Close()
			return n, err
		}
		n++
	}
}

// queryDelete runs a fenced DELETE sent with Query. One without RETURNING runs as
// Exec runs it (execDelete: counted on the rows affected, in a transaction of the
// wrapper's own outside the caller's), and answers with no rows and no columns. A
// DELETE … RETURNING runs as one statement where the table's guard accepts it
// (oneStepQuery), in or outside a transaction; else in the caller's transaction
// only, the fencing UPDATE, then the DELETE, whose rows are counted against the rows
// stamped (they are the rows as the UPDATE stamped them). A DELETE that fails after
// the UPDATE stamped rows leaves the transaction able only to roll back (stampKept).
func (c *conn) queryDelete(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (driver.Rows, error) {
	if !p.Returns {
		res, err := c.execDelete(ctx, r, p, args, tok, ver, full)
		if err != nil {
			return nil, err
		}
		n, _ := res.RowsAffected()
		return noRows{n: n}, nil
	}
	ok, err := c.deleteFenced(ctx, p)
	if err != nil {
		return nil, err
	}
	if ok {
		return c.oneStepQuery(ctx, r, p.One, args, tok)
	}
	if c.tx == nil {
		return nil, &UnsupportedError{Table: p.Guard.String(), Reason: "DELETE … RETURNING outside a transaction (begin one: the fencing UPDATE and the DELETE must commit together)"}
	}
	pre, p, preArgs, full, err := c.twoStepArgs(ctx, p, args, tok, ver, full)
	if err != nil {
		return nil, err
	}
	stamped, ok, err := c.stamp(ctx, r, pre, preArgs, p, full)
	if err != nil {
		return nil, c.stampFailed(c.core.mapErr(ctx, pre, tok, ver, err))
	}
	if !ok {
		stamped = -1
	}
	dr, err := r.query(ctx, p, full)
	if err != nil {
		return nil, c.stampKept(stamped, c.core.mapErr(ctx, p, tok, ver, err))
	}
	w := newRows(dr, c.core, p, tok, ver).(*rows)
	c.keepStampOnFailure(w, stamped)
	if ok {
		return c.countRows(w, p, "DELETE", stamped), nil
	}
	return w, nil
}

// keepStampOnFailure makes rows of the second statement of a two-statement write or
// read, run in the caller's transaction after its first stamped rows (-1: unknown),
// mark the transaction when they report an error while they stream (stampKept).
func (c *conn) keepStampOnFailure(w *rows, stamped int64) {
	st := c.tx
	w.onDone(func(err error) {
		if err != nil && st != nil && c.tx == st {
			_ = c.stampKept(stamped, err)
		}
	})
}

// twoStepRefused returns the refusal of p's two-statement form (plan.Plan.TwoStepErr:
// its selection may find other rows the second time), nil when it has none. The
// wrapper asks it where it would send the two statements, before sending anything.
func (c *conn) twoStepRefused(p *plan.Plan) error {
	if p.TwoStepErr == nil {
		return nil
	}
	c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
	return asUnsupported(p.TwoStepErr)
}

// twoStepArgs returns the two statements of p's two-statement DELETE
// (deleteStatements: keyed where the table's key is known) and their arguments, full
// being p's own; or the refusal of the DELETE's form (twoStepRefused), or of its
// table (twoStepReaches: its UPDATE may not reach the rows its DELETE does). A keyed pair
// gets the connection's next nonce.
func (c *conn) twoStepArgs(ctx context.Context, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (pre, del *plan.Plan, preArgs, delArgs []driver.NamedValue, err error) {
	if pre, del, err = c.deleteStatements(ctx, p); err != nil {
		return nil, nil, nil, nil, err
	}
	if err = c.twoStepRefused(del); err != nil {
		return nil, nil, nil, nil, err
	}
	if err = c.twoStepReaches(ctx, del); err != nil {
		return nil, nil, nil, nil, err
	}
	if preArgs, err = bind(pre, args, tok, ver); err != nil {
		return nil, nil, nil, nil, err
	}
	if del == p {
		return pre, del, preArgs, full, nil
	}
	if delArgs, err = bind(del, args, tok, ver); err != nil {
		return nil, nil, nil, nil, err
	}
	if del.ClaimLocator {
		return pre, del, preArgs, delArgs, nil // by row locator: no nonce
	}
	nonce, err := c.keyedNonce(ctx)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	withNonce(pre, preArgs, nonce)
	withNonce(del, delArgs, nonce)
	return pre, del, preArgs, delArgs, nil
}

// execDeleting executes del, the DELETE of a two-statement DELETE sent with Exec. A
// DELETE … RETURNING answers with rows, which a driver's Exec may not count as
// affected (go-sql-driver/mysql reports 0): it is queried, and its rows counted.
func (c *conn) execDeleting(ctx context.Context, r runner, del *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	if !del.Returns {
		return r.exec(ctx, del, args)
	}
	rows, err := r.query(ctx, del, args)
	if err != nil {
		return nil, err
	}
	n, err := drain(rows)
	if err != nil {
		return nil, err
	}
	return counted(n), nil
}

// stamp runs the fencing UPDATE pre of a two-statement DELETE del: it returns the
// rows it stamped (ok false: the driver cannot say) and, where pre returns their row
// locators (plan.Plan.Locators), binds them to del's plan.ArgStamped arguments in
// delArgs, as a JSON array.
func (c *conn) stamp(ctx context.Context, r runner, pre *plan.Plan, preArgs []driver.NamedValue, del *plan.Plan, delArgs []driver.NamedValue) (n int64, ok bool, err error) {
	if !pre.Locators {
		res, err := r.exec(ctx, pre, preArgs)
		if tooLarge := c.keyedTooLarge(pre, err); tooLarge != nil {
			return 0, false, tooLarge
		}
		if err != nil {
			return 0, false, err
		}
		n, ok = affected(res)
		return n, ok, nil
	}
	rows, err := r.query(ctx, pre, preArgs)
	if err != nil {
		return 0, false, err
	}
	list, n, err := locatorList(rows)
	if err != nil {
		return 0, false, err
	}
	for i, a := range del.Args {
		if a == plan.ArgStamped {
			delArgs[i].Value = list
		}
	}
	return n, true, nil
}

// locatorList reads rows of one integer column (row locators) to their end and
// closes them; it returns them as a JSON array, and how many there were.
func locatorList(rows driver.Rows) (string, int64, error) {
	defer rows.Close()
	if len(rows.Columns()) != 1 {
		return "", 0, fmt.Errorf("fencedsql: the fencing UPDATE returned %d columns, want its rows' locators", len(rows.Columns()))
	}
	dest := make([]driver.Value, 1)
	b := []byte{'['}
	var n int64
	for {
		err := rows.Next(dest)
		if err == io.EOF {
			return string(append(b, ']')), n, nil
		}
		if err != nil {
			return "", n, err
		}
		id, ok := dest[0].(int64)
		if !ok {
			return "", n, fmt.Errorf("fencedsql: the fencing UPDATE returned a row locator of type %T, want int64", dest[0])
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
		n++
	}
}

// twoStep runs a fenced DELETE: the fencing UPDATE, then the DELETE restricted to rows
// carrying the token, in the caller's transaction or in one of its own. A DELETE that
// fails in the caller's transaction after the UPDATE stamped rows leaves the
// transaction able only to roll back (stampKept). A plan whose selection the two
// statements could read differently is refused (twoStepRefused).
func (c *conn) twoStep(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (driver.Result, error) {
	// Outside a caller's transaction every failure before the wrapper's own COMMIT is
	// sent is NotCommitted, whatever its kind (a context that ended, a connection cut,
	// a server's timeout): the statements ran, if at all, in a transaction that was
	// never committed (red-team rt35b F1). Inside one, Commit tells the outcome. A
	// server's error CommitOutcome classifies NotCommitted by itself is returned as the
	// driver returned it (keepsDriverError, red-team rt43d F2: a foreign key refusing
	// the DELETE is the driver's error, as on the plain driver).
	notCommitted := func(err error) error {
		if c.tx == nil && !keepsDriverError(c.core.dialect, err) {
			return withOutcomeAs(err, NotCommitted)
		}
		return err
	}
	pre, p, preArgs, full, err := c.twoStepArgs(ctx, p, args, tok, ver, full)
	if err != nil {
		return nil, notCommitted(err)
	}
	var own driver.Tx
	if c.tx == nil {
		if own, err = c.rawBegin(ctx, driver.TxOptions{}); err != nil {
			return nil, notCommitted(err)
		}
	}
	fail := func(pl *plan.Plan, err error) (driver.Result, error) {
		if own != nil {
			_ = c.endTx(ctx, own, false)
		}
		return nil, notCommitted(c.core.mapErr(ctx, pl, tok, ver, err))
	}
	stamped, ok1, err := c.stamp(ctx, r, pre, preArgs, p, full)
	if err != nil && own == nil {
		return nil, c.stampFailed(c.core.mapErr(ctx, pre, tok, ver, err))
	}
	if err != nil {
		return fail(pre, err)
	}
	var res driver.Result
	if ok1 && stamped > listFrom && p.Listed != nil && !p.Returns {
		res, err = c.deleteListed(ctx, r, p, args, tok, ver, stamped)
	} else {
		res, err = c.execDeleting(ctx, r, p, full)
	}
	if err != nil {
		if own == nil {
			if !ok1 {
				stamped = -1
			}
			return nil, c.stampKept(stamped, c.core.mapErr(ctx, p, tok, ver, err))
		}
		return fail(p, err)
	}
	deleted, ok2 := affected(res)
	if ok1 && ok2 {
		if err := c.exact(p, "DELETE", stamped, deleted); err != nil {
			if own != nil { // breakTx marked nothing: the transaction is the wrapper's own
				_ = c.endTx(ctx, own, false)
			}
			return nil, notCommitted(err)
		}
	}
	if own != nil {
		// The lease may have been lost while the statements waited (a row lock): the
		// wrapper's own transaction commits only under a lease still held, as a
		// caller's Commit does (red-team rt20m F3).
		if b, bound := bindingFrom(ctx); bound {
			if cause := lostCauseAll(b.leases); cause != nil {
				_ = c.endTx(ctx, own, false)
				return nil, notCommitted(lostErr("transaction rolled back", cause))
			}
		}
		if err := c.endTx(ctx, own, true); err != nil {
			return nil, c.core.mapErr(ctx, p, tok, ver, err)
		}
	}
	return res, nil
}
