package fencedsql

import (
	"database/sql/driver"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// A DELETE runs as two statements: a fencing UPDATE that selects and stamps the rows,
// then the caller's DELETE restricted to rows carrying the token; a claimed locking read
// likewise runs its claim, then the caller's SELECT. The second statement selects its
// rows again. The rewriter refuses the conditions it can see would select differently
// (internal/plan/stable.go), but it cannot see everything that the fencing UPDATE changes: a column
// the database maintains on every UPDATE (MySQL ON UPDATE CURRENT_TIMESTAMP, a trigger),
// a view over the fencing columns, ROW_COUNT() or changes(), the statement clock. So the
// wrapper also counts: the second statement must select exactly as many rows as the
// fencing UPDATE stamped. When it does not, its result is not what the caller's
// statement means, and nothing of it may be kept: the wrapper's own transaction is
// rolled back, and a caller's transaction is marked so that Commit rolls it back and
// returns the same error.

// inexactError is the refusal of a two-statement write or read whose second statement
// selected other rows than its fencing UPDATE.
// complete false: the statement returned at least selected rows (more than stamped).
func inexactError(p *plan.Plan, what string, stamped, selected int64, complete bool) error {
	n := fmt.Sprint(selected)
	if !complete {
		n = "at least " + n
	}
	return &UnsupportedError{Table: p.Guard.String(), Reason: fmt.Sprintf(
		"the %s selected %s rows after its fencing UPDATE stamped %d: its condition reads something that UPDATE changed "+
			"or that changed between the two statements (a column the database updates on every UPDATE, a trigger, a view "+
			"of the fencing columns, ROW_COUNT()/changes(), the statement clock, a function reading it, a user-defined "+
			"aggregate); the transaction can only roll back", what, n, stamped)}
}

// affected returns a result's RowsAffected, ok false when the driver cannot say.
func affected(res driver.Result) (int64, bool) {
	if res == nil {
		return 0, false
	}
	n, err := res.RowsAffected()
	return n, err == nil
}

// breakTx marks the open transaction so that Commit rolls it back with err.
func (c *conn) breakTx(err error) {
	if c.tx != nil && c.tx.broken == nil {
		c.tx.broken = err
	}
}

// exact judges a two-statement write or read once its second statement is done:
// that statement selected as many rows as the fencing UPDATE stamped, or the open
// transaction is marked broken (breakTx) and the refusal returned. Every path that
// runs the two statements (twoStep, queryDelete and queryClaim through countRows,
// a pipelined batch) judges with it.
func (c *conn) exact(p *plan.Plan, what string, stamped, selected int64) error {
	return c.exactly(p, what, stamped, selected, true)
}

// exactly is exact for a count that may be a lower bound (complete false).
func (c *conn) exactly(p *plan.Plan, what string, stamped, selected int64, complete bool) error {
	if stamped == selected && complete {
		return nil
	}
	err := inexactError(p, what, stamped, selected, complete)
	c.breakTx(err)
	c.core.metrics.count(c.core.metrics.unsupported, p.Guard)
	return err
}

// countRows makes r check that it returns as many rows as the fencing UPDATE stamped
// (exact): a row past that number fails Next at once, fewer fail it in place of
// io.EOF, and rows closed before their end are read to it first (drain); on a
// mismatch the open transaction is marked broken. Where the caller reads the native rows
// rather than r's Next (fencedpgx), r judges the count the native rows report when
// they close (rowCounter).
func (c *conn) countRows(r driver.Rows, p *plan.Plan, what string, stamped int64) *rows {
	w, ok := r.(*rows)
	if !ok {
		w = newRows(r, c.core, nil, 0, 0).(*rows)
	}
	w.expect = func(n int64, complete bool) error { return c.exactly(p, what, stamped, n, complete) }
	w.most = stamped
	return w
}
