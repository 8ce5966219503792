package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tokenFor returns the token a guarded write on this connection carries: the
// transaction's, else the statement context's.
func (c *conn) tokenFor(ctx context.Context, g *plan.Table) (uint64, error) {
	tok := uint64(0)
	if c.tx != nil {
		tok = c.tx.token
	}
	if tok == 0 {
		b, ok := bindingFrom(ctx)
		if !ok {
			return 0, &NoTokenError{Table: g.String(), Reason: "no fencing token in the context or transaction (use fencedsql.WithLease or fencedsql.WithToken)"}
		}
		tok = b.token
	}
	switch {
	case tok == 0:
		return 0, &NoTokenError{Table: g.String(), Reason: "token 0 (or a nil lease) is not a fencing token"}
	case tok > math.MaxInt64:
		return 0, &NoTokenError{Table: g.String(), Reason: "token exceeds the largest BIGINT"}
	}
	return tok, nil
}

// guardedArgs resolves the token and expected version, binds a plan's arguments and
// runs the lazy schema and session checks: everything before a guarded write is sent.
func (c *conn) guardedArgs(ctx context.Context, p *plan.Plan, args []driver.NamedValue) (tok uint64, ver int64, out []driver.NamedValue, err error) {
	tok, err = c.tokenFor(ctx, p.Guard)
	if err != nil {
		c.core.cfg.logger.Warn("fencedsql: guarded write without a token refused", "table", p.Guard.String())
		c.core.metrics.count(c.core.metrics.noToken, p.Guard)
		return 0, 0, nil, err
	}
	ver, _ = expectedVersion(ctx)
	if out, err = bind(p, args, tok, ver); err != nil {
		return 0, 0, nil, err
	}
	if err = c.verify(ctx, p.Guard); err != nil {
		return 0, 0, nil, err
	}
	return tok, ver, out, nil
}

// bind builds p's arguments from the caller's, the token and the version.
func bind(p *plan.Plan, user []driver.NamedValue, tok uint64, ver int64) ([]driver.NamedValue, error) {
	if p.NUser >= 0 && len(user) != p.NUser {
		return nil, fmt.Errorf("fencedsql: statement on %s has %d placeholders but %d arguments were given", p.Guard, p.NUser, len(user))
	}
	out := make([]driver.NamedValue, len(p.Args))
	for i, r := range p.Args {
		out[i].Ordinal = i + 1
		switch r {
		case plan.ArgToken:
			out[i].Value = int64(tok)
		case plan.ArgVersion:
			out[i].Value = ver
		default:
			u := user[r]
			if u.Name != "" {
				return nil, &UnsupportedError{Table: p.Guard.String(), Reason: "named arguments (sql.Named) in a write to a guarded table"}
			}
			out[i].Value = u.Value
		}
	}
	return out, nil
}

// execPlan runs a guarded write.
func (c *conn) execPlan(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	if p.Kind == plan.KindClaim {
		// A locking read sent with Exec returns no rows to count.
		if _, err := c.claim(ctx, r, p, args); err != nil {
			return nil, err
		}
		res, err := r.exec(ctx, p, args)
		return res, c.core.mapPassErr(err)
	}
	tok, ver, full, err := c.guardedArgs(ctx, p, args)
	if err != nil {
		return nil, err
	}
	if p.Pre != nil {
		return c.twoStep(ctx, r, p, args, tok, ver, full)
	}
	res, err := r.exec(ctx, p, full)
	if err != nil {
		return nil, c.core.mapErr(p, tok, ver, err)
	}
	return res, nil
}

// queryPlan runs a guarded write that returns rows (RETURNING), or a claimed locking read.
func (c *conn) queryPlan(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error) {
	if p.Kind == plan.KindClaim {
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
	tok, ver, full, err := c.guardedArgs(ctx, p, args)
	if err != nil {
		return nil, err
	}
	stamped := int64(-1)
	if p.Pre != nil {
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
		if n, ok := affected(res); ok {
			stamped = n
		}
	}
	rows, err := r.query(ctx, p, full)
	if err != nil {
		return nil, c.core.mapErr(p, tok, ver, err)
	}
	w := newRows(rows, c.core, p, tok, ver)
	if stamped >= 0 {
		return c.countRows(w, p, "DELETE", stamped), nil
	}
	return w, nil
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

// mapPassErr maps the error of a statement sent as the caller wrote it (no guarded
// write): only unique violations become ErrDuplicate.
func (k *core) mapPassErr(err error) error { return k.mapErr(nil, 0, 0, err) }

// mapErr turns a driver error into the package's typed errors where it is one of
// ours; any other error (driver.ErrBadConn included) is returned unchanged.
func (k *core) mapErr(p *plan.Plan, tok uint64, ver int64, err error) error {
	if err == nil || err == driver.ErrSkip || errors.Is(err, driver.ErrBadConn) {
		return err
	}
	info := k.dialect.Classify(err)
	switch info.Kind {
	case dialect.ErrorNotNull:
		if p == nil || p.Guard == nil {
			return err
		}
		g := p.Guard
		switch {
		case strings.EqualFold(info.Column, g.TokenCol):
			k.cfg.logger.Warn("fencedsql: write fenced by a newer token", "table", g.String(), "token", tok)
			k.metrics.count(k.metrics.fenced, g)
			return k.explainFenced(&FencedError{Table: g.String(), Token: tok, Err: err}, g)
		case strings.EqualFold(info.Column, g.VerCol):
			k.metrics.count(k.metrics.version, g)
			return &VersionConflictError{Table: g.String(), Expected: ver, Err: err}
		}
	case dialect.ErrorGuard:
		return &GuardError{Table: info.Table, Hint: guardHint, Err: err}
	case dialect.ErrorBelowFloor:
		table := info.Table
		if p != nil && p.Guard != nil {
			table = p.Guard.String()
			k.metrics.count(k.metrics.fenced, p.Guard)
		}
		k.cfg.logger.Warn("fencedsql: write refused: token below the database's token floor", "table", table, "token", tok)
		return &BelowFloorError{Table: table, Token: tok, Err: err}
	case dialect.ErrorUnique:
		table := info.Table
		var g *plan.Table
		if p != nil && p.Guard != nil {
			g = p.Guard
			table = g.String()
		}
		k.metrics.count(k.metrics.unique, g)
		return &DuplicateError{Table: table, Constraint: info.Constraint, Err: err}
	}
	return err
}
