package fencedsql

import (
	"context"
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// execClaim runs a claimed locking read sent with Exec (it returns no rows to count).
func (c *conn) execClaim(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	if _, err := c.claim(ctx, r, p, args); err != nil {
		return nil, err
	}
	res, err := r.exec(ctx, p, args)
	return res, c.core.mapPassErr(err)
}

// queryClaim runs a claimed locking read: the claim, then the read, whose rows are
// counted against the rows claimed.
func (c *conn) queryClaim(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error) {
	claimed, err := c.claim(ctx, r, p, args)
	if err != nil {
		return nil, err
	}
	rows, err := r.query(ctx, p, args)
	if err != nil {
		return nil, c.core.mapPassErr(err)
	}
	if claimed < 0 {
		return newRows(rows, c.core, nil, 0, 0), nil
	}
	return c.countRows(rows, p, "locking SELECT", claimed), nil
}

// claim runs a locking read's fencing UPDATE when the statement carries a token: the
// rows it will lock are stamped with the token first, or the read fails with ErrFenced.
// Without a token (none in the context or transaction) it does nothing and the read
// runs as an ordinary locking read.
//
// It returns the number of rows claimed, -1 when nothing was claimed or the driver
// cannot say.
func (c *conn) claim(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (int64, error) {
	if !c.hasToken(ctx) {
		return -1, nil
	}
	if p.ClaimErr != nil {
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return -1, asUnsupported(p.ClaimErr)
	}
	if c.tx == nil {
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return -1, &UnsupportedError{Table: p.Guard.String(), Reason: "a locking read (SELECT … FOR UPDATE) with a token outside a transaction: begin one with BeginTx (the claim and the read must commit together, and the lock ends with the statement otherwise)"}
	}
	tok, _, preArgs, err := c.guardedArgs(ctx, p.Pre, args)
	if err != nil {
		return -1, err
	}
	res, err := r.exec(ctx, p.Pre, preArgs)
	if err != nil {
		return -1, c.core.mapErr(p.Pre, tok, 0, err)
	}
	if n, ok := affected(res); ok {
		return n, nil
	}
	return -1, nil
}

// hasToken reports whether a statement with ctx on this connection carries a token
// (a valid one or not: tokenFor judges it).
func (c *conn) hasToken(ctx context.Context) bool {
	if c.tx != nil && c.tx.token != 0 {
		return true
	}
	_, ok := bindingFrom(ctx)
	return ok
}
