package fencedsql

import (
	"context"
	"database/sql/driver"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// endTx commits (commit) or rolls back rt, a transaction of the driver connection
// under c: the caller's (tx) or the wrapper's own (a two-statement DELETE outside a
// transaction). Where the dialect spells its transaction end so that no session
// setting changes it (dialect.TxEnder: MySQL/MariaDB's completion_type, which a
// stored function may set to CHAIN after the session check passed) and the session
// checks are on, that statement is sent in place of the driver's Commit or Rollback;
// its errors are the driver's for the same statement. When it fails the session may
// still be inside the transaction (a server or proxy that does not parse it, a lost
// connection): the connection is not given back to the pool (conn.endFailed), and the
// server rolls back what it holds when it closes. A driver hooked on Tx.Commit and
// Tx.Rollback (otelsql's spans) sees the end as an Exec of the statement.
//
// ctx is the statement's (the wrapper's own transaction) or the one the caller's
// transaction was begun with (pgx's stdlib ends its transactions under that one too).
// The COMMIT statement runs under ctx itself: the caller's deadline holds (red-team
// rt44f F2: under context.Background(), a COMMIT whose network went dark hung the
// statement past its 1 s deadline until TCP gave up), and a COMMIT cut by it is
// Unknown (connLost), never NotCommitted. The ROLLBACK runs under endContext's
// context: detached from ctx (it must still be sent after a failure that ended ctx:
// it releases the row locks now rather than when the server notices the connection
// gone) and bounded so that it ends at most endGrace after ctx's deadline. A driver's
// own Commit and Rollback take no context: they run as the driver runs them.
func (c *conn) endTx(ctx context.Context, rt driver.Tx, commit bool) error {
	if e, ok := c.core.dialect.(dialect.TxEnder); ok && c.core.cfg.schemaCheck {
		ectx := ctx
		if !commit {
			var cancel context.CancelFunc
			ectx, cancel = endContext(ctx)
			defer cancel()
		}
		_, err := c.execOwn(ectx, e.EndTx(commit))
		if err != nil {
			c.endFailed = true
		}
		return err
	}
	if commit {
		return rt.Commit()
	}
	return rt.Rollback()
}

// endGrace is how long a ROLLBACK the wrapper sends may outlive the deadline of the
// context it ends a transaction for (endContext).
const endGrace = time.Second

// endContext is the context of a ROLLBACK the wrapper sends for ctx: ctx's values, not
// its cancellation; its deadline is ctx's, but at least endGrace from now (a ROLLBACK
// after the failure that ended ctx still gets sent) and at most rollbackQueryTimeout
// from now (also without a deadline in ctx). A ROLLBACK that runs out of time fails the
// connection (conn.endFailed): the server rolls back when it closes.
func endContext(ctx context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	end := now.Add(rollbackQueryTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(end) {
		end = d
	}
	if min := now.Add(endGrace); end.Before(min) {
		end = min
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}
