package fencedsql

import (
	"context"
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// A claimed locking read runs in one of two forms. Where the planner built the claim
// in one statement (plan.ClaimOne, PostgreSQL: a data-modifying WITH query that stamps
// the rows and returns the caller's columns of exactly those rows), that statement
// runs alone: its rows are the rows claimed, so they are not counted. Otherwise the
// fencing UPDATE (Pre) runs first, then the caller's text, whose rows are counted
// against the rows stamped (exact.go); a read that fails after the claim stamped rows
// leaves the caller's transaction able only to roll back (stamp_kept.go). Without a
// token, the caller's text runs as written, an ordinary locking read.

// execClaim runs a claimed locking read sent with Exec: in one statement where the
// plan has it, else as queryClaim's claim and counted read, whose rows it reads to the
// end and counts (RowsAffected). Without a token, the caller's text as written.
func (c *conn) execClaim(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Result, error) {
	one, tok, full, err := c.claimOne(ctx, p, args, false)
	if err != nil {
		return nil, err
	}
	if one != nil {
		rec, err := c.absentRecordFor(ctx, p, args)
		if err != nil {
			return nil, err
		}
		res, err := r.exec(ctx, one, full)
		if err != nil {
			err = c.core.mapErr(ctx, one, tok, 0, err)
			c.core.doubtVerdict(&c.core.claimOne, one.Guard, err)
			return nil, err
		}
		if n, ok := affected(res); !ok || n == 0 {
			present, err := c.keyPresent(ctx, rec)
			if err != nil {
				return nil, err
			}
			if present {
				// The key's row did not meet the claim's other conjuncts: run the
				// claim again, which stamps it if it began to match meanwhile.
				if res, err = r.exec(ctx, one, full); err != nil {
					err = c.core.mapErr(ctx, one, tok, 0, err)
					c.breakTxUnlessAborted(err)
					return nil, err
				}
				return res, nil
			}
			if err := c.recordAbsence(ctx, rec); err != nil {
				return nil, err
			}
		}
		return res, nil
	}
	if c.hasToken(ctx) {
		// The claim and the read of the rows it stamped, as queryClaim runs them, read
		// to the end: re-sending the caller's text after the claim would lock a row
		// that began to match in between without stamping it (red-team rt20m F4).
		rows, err := c.queryClaim(ctx, r, p, args)
		if err != nil {
			return nil, err
		}
		n, err := drain(rows)
		if err != nil {
			return nil, err
		}
		return counted(n), nil
	}
	res, err := r.exec(ctx, p, args)
	return res, c.core.mapPassErr(nil, err)
}

// queryClaim runs a claimed locking read: in one statement where the plan has it,
// else the claim, then the read, whose rows are counted against the rows claimed.
func (c *conn) queryClaim(ctx context.Context, r runner, p *plan.Plan, args []driver.NamedValue) (driver.Rows, error) {
	one, tok, full, err := c.claimOne(ctx, p, args, false)
	if err != nil {
		return nil, err
	}
	if one != nil {
		rec, err := c.absentRecordFor(ctx, p, args)
		if err != nil {
			return nil, err
		}
		dr, err := r.query(ctx, one, full)
		if err != nil {
			err = c.core.mapErr(ctx, one, tok, 0, err)
			c.core.doubtVerdict(&c.core.claimOne, one.Guard, err)
			return nil, err
		}
		// PostgreSQL may report the fencing failure of a later row, or the statement's
		// own failure, after the first rows: the rows map it like the statement's error.
		rs := newRows(dr, c.core, one, tok, 0).(*rows)
		rs.onDone(func(err error) { c.core.doubtVerdict(&c.core.claimOne, one.Guard, err) })
		if rec != nil {
			// Whether the claim found a row is known when its rows close.
			rs.onEmpty = func() error {
				present, err := c.keyPresent(ctx, rec)
				if err != nil || !present {
					if err != nil {
						return err
					}
					return c.recordAbsence(ctx, rec)
				}
				// The key's row did not meet the claim's other conjuncts: run the
				// claim again; a row it stamps now began to match after the caller
				// read none.
				res, err := r.exec(ctx, one, full)
				if err != nil {
					err = c.core.mapErr(ctx, one, tok, 0, err)
					c.breakTxUnlessAborted(err)
					return err
				}
				if n, ok := affected(res); !ok || n > 0 {
					return c.claimMatchedLate(one.Guard)
				}
				return nil
			}
		}
		return rs, nil
	}
	if !c.hasToken(ctx) {
		rows, err := r.query(ctx, p, args)
		if err != nil {
			return nil, c.core.mapPassErr(nil, err)
		}
		return newRows(rows, c.core, nil, 0, 0), nil
	}
	if err := c.claimReadable(p); err != nil {
		return nil, err
	}
	pre, read, err := c.claimStatements(ctx, p, args)
	if err != nil {
		return nil, err
	}
	var nonce int64
	if pre != p.Pre && !read.ClaimLocator { // keyed by row locator: no nonce
		if nonce, err = c.keyedNonce(ctx); err != nil {
			return nil, err
		}
	}
	// The read returns only rows carrying the token (plan.ClaimRead; keyed, only the
	// rows this claim stamped), counted against the rows stamped. It is bound, and
	// its checks run, before the claim stamps anything: a check failing after the
	// stamp would leave it in the caller's transaction (red-team rt20m F2).
	_, _, readArgs, err := c.guardedArgs(ctx, read, args)
	if err != nil {
		return nil, err
	}
	withNonce(read, readArgs, nonce)
	rec, err := c.absentRecordFor(ctx, p, args)
	if err != nil {
		return nil, err
	}
	claimed, err := c.claim(ctx, r, pre, args, nonce)
	if err != nil {
		return nil, err
	}
	if claimed <= 0 {
		present, err := c.keyPresent(ctx, rec)
		if err != nil {
			return nil, err
		}
		if present {
			// The key's row did not meet the claim's other conjuncts: stamp again, so
			// that a row that began to match meanwhile is claimed and read.
			if claimed, err = c.claim(ctx, r, pre, args, nonce); err != nil {
				return nil, err
			}
		} else if err := c.recordAbsence(ctx, rec); err != nil {
			return nil, err
		}
	}
	dr, err := r.query(ctx, read, readArgs)
	if err != nil {
		return nil, c.stampKept(claimed, c.core.mapPassErr(read, err))
	}
	w := newRows(dr, c.core, nil, 0, 0).(*rows)
	w.read = read
	c.keepStampOnFailure(w, claimed)
	if claimed < 0 {
		return w, nil
	}
	return c.countRows(w, read, "locking SELECT", claimed), nil
}

// claimReadable refuses a claimed read whose rows are to be read in two statements
// when the plan has no read restricted to the rows carrying the token
// (plan.ClaimRead): the caller's own text, sent again, could return rows it did not
// claim.
func (c *conn) claimReadable(p *plan.Plan) error {
	if p.ClaimRead != nil {
		return nil
	}
	c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
	return &UnsupportedError{Table: p.Guard.String(), Reason: plan.OffsetTwoStatements}
}

// claimOne judges a locking read (claimable) and, when it runs as one statement,
// returns that statement with its token and bound arguments; one is nil otherwise.
// implicitTx: see claimable.
func (c *conn) claimOne(ctx context.Context, p *plan.Plan, args []driver.NamedValue, implicitTx bool) (one *plan.Plan, tok uint64, full []driver.NamedValue, err error) {
	if one, err = c.claimable(ctx, p, implicitTx); err != nil || one == nil {
		return nil, 0, nil, err
	}
	if tok, _, full, err = c.guardedArgs(ctx, one, args); err != nil {
		return nil, 0, nil, err
	}
	return one, tok, full, nil
}

// claimable judges a locking read before it runs: with a token (bound: hasToken), a
// claim the planner refused, one outside a transaction, or one whose binding carries
// no usable token (tokenFor: ErrNoToken) is refused, before anything is sent. It
// returns the one-statement claim to run when the statement carries a token and the
// plan has one (a prepared statement prepares it on first use) and, with the lazy
// schema checks on, the dialect's dialect.ClaimOneChecker verdict on the table is yes;
// nil otherwise (claim then decides what runs). implicitTx says the statement runs in a transaction the
// wrapper does not see begin: a pipelined batch, which the database runs as one
// implicit transaction (adapterConn.Batch), so that the claim and the read commit
// together; every other judgement is the same.
func (c *conn) claimable(ctx context.Context, p *plan.Plan, implicitTx bool) (*plan.Plan, error) {
	if !c.hasToken(ctx) {
		return nil, nil
	}
	if p.ClaimErr != nil {
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return nil, asUnsupported(p.ClaimErr)
	}
	if c.tx == nil && !implicitTx {
		c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
		return nil, &UnsupportedError{Table: p.Guard.String(), Reason: "a locking read (SELECT … FOR UPDATE) with a token outside a transaction: begin one with BeginTx (the claim and the read must commit together, and the lock ends with the statement otherwise)"}
	}
	if _, err := c.tokenFor(ctx, p.Guard); err != nil {
		return nil, err // bound to no usable token: refused as a write is, nothing sent
	}
	if err := c.locatable(ctx, p); err != nil {
		return nil, err
	}
	one, err := c.oneClaim(ctx, p)
	if err == nil && one == nil {
		err = c.twoStepRefused(p) // the two statements would select twice
	}
	return one, err
}

// locatable refuses a claim by row locator (plan.ClaimLocator) on a table the
// locator does not identify rows of: the dialect's dialect.LocatorChecker verdict,
// asked once per pool and table with the lazy schema checks on.
func (c *conn) locatable(ctx context.Context, p *plan.Plan) error {
	k, ok := c.core.dialect.(dialect.LocatorChecker)
	if !p.ClaimLocator || !ok || !c.core.cfg.schemaCheck {
		return nil
	}
	yes, err := c.tableVerdict(ctx, &c.core.locator, p.Guard, "row locator", k.LocatorQuery)
	if err != nil || yes {
		return err
	}
	c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
	return &UnsupportedError{Table: p.Guard.String(), Reason: "a locking read with ORDER BY, LIMIT, OFFSET or NOWAIT on a partitioned table, a table with inheritance children or an UPDATE rule, or one the session may not SELECT as a whole: its claim finds rows by ctid, which identifies a row only within one partition and needs the table's SELECT privilege, in a WITH query a rule refuses: lock the rows by their key (a WHERE alone, without ORDER BY, LIMIT, OFFSET or NOWAIT)"}
}

// oneClaim returns p's one-statement claim when it may be sent: the plan has one and,
// with the lazy schema checks on, the table's dialect.ClaimOneChecker verdict
// (tableVerdict) is yes. nil means the two statements.
func (c *conn) oneClaim(ctx context.Context, p *plan.Plan) (*plan.Plan, error) {
	if p.ClaimOne == nil || !c.core.cfg.schemaCheck {
		return p.ClaimOne, nil
	}
	if k, ok := c.core.dialect.(dialect.ClaimOneChecker); ok {
		yes, err := c.tableVerdict(ctx, &c.core.claimOne, p.Guard, "one-statement claim", k.ClaimOneQuery)
		if err != nil || !yes {
			return nil, err
		}
	}
	return p.ClaimOne, nil
}

// claim runs a locking read's fencing UPDATE when the statement carries a token: the
// rows it will lock are stamped with the token first, or the read fails with ErrFenced.
// Without a token (none in the context or transaction) it does nothing and the read
// runs as an ordinary locking read. claimable has judged the statement.
//
// It returns the number of rows claimed, -1 when nothing was claimed or the driver
// cannot say.
func (c *conn) claim(ctx context.Context, r runner, pre *plan.Plan, args []driver.NamedValue, nonce int64) (int64, error) {
	if !c.hasToken(ctx) {
		return -1, nil
	}
	tok, _, preArgs, err := c.guardedArgs(ctx, pre, args)
	if err != nil {
		return -1, err
	}
	withNonce(pre, preArgs, nonce)
	res, err := r.exec(ctx, pre, preArgs)
	if tooLarge := c.keyedTooLarge(pre, err); tooLarge != nil {
		return -1, tooLarge
	}
	if err != nil {
		return -1, c.core.mapErr(ctx, pre, tok, 0, err)
	}
	if n, ok := affected(res); ok {
		return n, nil
	}
	return -1, nil
}
