package fencedsql

import (
	"context"
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// execDelete runs a fenced DELETE sent with Exec.
func (c *conn) execDelete(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (driver.Result, error) {
	return c.twoStep(ctx, r, p, args, tok, ver, full)
}

// queryDelete runs a fenced DELETE … RETURNING: in the caller's transaction only, the
// fencing UPDATE, then the DELETE, whose rows are counted against the rows stamped.
func (c *conn) queryDelete(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (driver.Rows, error) {
	if c.tx == nil {
		return nil, &UnsupportedError{Table: p.Guard.String(), Reason: "DELETE … RETURNING outside a transaction (begin one: the fencing UPDATE and the DELETE must commit together)"}
	}
	preArgs, err := bind(p.Pre, args, tok, ver)
	if err != nil {
		return nil, err
	}
	res, err := r.exec(ctx, p.Pre, preArgs)
	if err != nil {
		return nil, c.core.mapErr(p.Pre, tok, ver, err)
	}
	rows, err := r.query(ctx, p, full)
	if err != nil {
		return nil, c.core.mapErr(p, tok, ver, err)
	}
	w := newRows(rows, c.core, p, tok, ver)
	if n, ok := affected(res); ok {
		return c.countRows(w, p, "DELETE", n), nil
	}
	return w, nil
}

// twoStep runs a fenced DELETE: the fencing UPDATE, then the DELETE restricted to rows
// carrying the token, in the caller's transaction or in one of its own.
func (c *conn) twoStep(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue, tok uint64, ver int64, full []driver.NamedValue) (driver.Result, error) {
	preArgs, err := bind(p.Pre, args, tok, ver)
	if err != nil {
		return nil, err
	}
	var own driver.Tx
	if c.tx == nil {
		if own, err = c.rawBegin(ctx, driver.TxOptions{}); err != nil {
			return nil, err
		}
	}
	fail := func(pl *plan.Plan, err error) (driver.Result, error) {
		if own != nil {
			_ = own.Rollback()
		}
		return nil, c.core.mapErr(pl, tok, ver, err)
	}
	preRes, err := r.exec(ctx, p.Pre, preArgs)
	if err != nil {
		return fail(p.Pre, err)
	}
	res, err := r.exec(ctx, p, full)
	if err != nil {
		return fail(p, err)
	}
	stamped, ok1 := affected(preRes)
	deleted, ok2 := affected(res)
	if ok1 && ok2 && stamped != deleted {
		err := inexactError(p, "DELETE", stamped, deleted)
		if own != nil {
			_ = own.Rollback()
		} else {
			c.breakTx(err)
		}
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return nil, err
	}
	if own != nil {
		if err := own.Commit(); err != nil {
			return nil, c.core.mapErr(p, tok, ver, err)
		}
	}
	return res, nil
}
