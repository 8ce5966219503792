package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// The statements a connection's server session and driver keep (docs/design.md G13,
// "Statements the session and the driver cached"; red-team rt57a F1, F2).
//
// PostgreSQL analyses a prepared statement once, and pgx keeps one per text it ran
// (its default statement cache), the wrapper's own check queries among them. Such a
// statement keeps the name resolution it was analysed under: a same-named table
// created earlier on the search_path — no change to a table it uses — does not make
// the server analyse it again, so it goes on writing the old table while every
// verdict of the pool is asked of the new one. And a session that dropped its
// prepared statements (DISCARD ALL, DEALLOCATE) fails each one the driver still sends
// by name, once per text (26000), the wrapper's check queries too.
//
// So: when DDL through the pool moved what a guarded name resolves to (forgetNames
// moved the pool's names generation), each connection, before its next statement,
// moves its names epoch on (the application's prepared statements prepare their forms
// again: stmtnames.go), empties its own statement cache and asks the dialect to have
// the session analyse its cached statements again (dialect.StatementForgetter:
// PostgreSQL's DISCARD PLANS). After a statement that may drop the session's prepared
// statements (plan.Plan.DropsStatements) or one that failed on a lost one, the
// dialect also drops the driver's cache of them (lost: pgx's DeallocateAll) before the
// connection's next statement, and a check query that failed on a lost statement is
// sent again once after it (queryStrings). A connection on which nothing moved pays
// one comparison per statement.

// followStatements runs before each statement on c (route, after settlePoolNames;
// each execution of a prepared statement): it notes a pool-names move of any
// connection since c last looked (see above), and asks the dialect to forget the
// cached statements while that is pending. A dialect that cannot now (a failed
// transaction) is asked again before the next statement; its failure is not the
// statement's.
func (c *conn) followStatements(ctx context.Context) {
	if g := c.core.namesGen.Load(); g != c.plansGen {
		c.plansGen = g
		c.namesEpoch++
		c.dropStatements()
		c.forgetPending = true
	}
	if c.forgetPending || c.lostPending {
		if c.forgetDriverStatements(ctx, c.lostPending) == nil {
			c.forgetPending, c.lostPending = false, false
		}
	}
}

// statementsDropped notes a statement that may drop the session's prepared statements
// (p.DropsStatements): c's own statement cache is emptied now and the driver's before
// c's next statement (followStatements). It runs before the statement is sent as text
// (sessionMoved), and after each execution of one prepared (sessionStmt), whose
// execution itself starts with followStatements.
func (c *conn) statementsDropped(p *plan.Plan) {
	if p.DropsStatements {
		c.dropStatements()
		c.lostPending = true
	}
}

// forgetDriverStatements asks the dialect to forget what c's session and, when lost,
// its driver cached (dialect.StatementForgetter); nil for a dialect that caches
// nothing.
func (c *conn) forgetDriverStatements(ctx context.Context, lost bool) error {
	f, ok := c.core.dialect.(dialect.StatementForgetter)
	if !ok {
		return nil
	}
	return f.ForgetStatements(ctx, c.raw, lost)
}

// statementLost reports whether dialect d reads err as a prepared statement the
// driver sent that the session no longer has (dialect.StatementForgetter): a check
// query that failed so says nothing about the schema (cutCheck).
func statementLost(d dialect.Dialect, err error) bool {
	f, ok := d.(dialect.StatementForgetter)
	return ok && err != nil && f.StatementLost(err)
}

// retryLost reports whether a check query that failed with err may be sent again
// (queryStrings, once): the session lost a prepared statement the driver sent
// (statementLost: a DISCARD ALL the planner did not see, sent through Raw) and the
// dialect forgot the cached ones — which it refuses in a failed transaction, where
// the failure aborted the caller's: there the check is cut (cutCheck).
func (c *conn) retryLost(ctx context.Context, err error) bool {
	if !statementLost(c.core.dialect, err) {
		return false
	}
	c.dropStatements()
	if c.forgetDriverStatements(ctx, true) != nil {
		c.lostPending = true
		return false
	}
	c.forgetPending, c.lostPending = false, false
	return true
}

// noteLost notes a statement of the caller's that failed with err because the session
// had lost the prepared statement the driver sent (a DISCARD ALL sent through Raw):
// the driver's cached statements are forgotten before c's next statement, so that
// the caller sees that error once, as under the bare driver, and no other text fails
// so after it.
func (c *conn) noteLost(err error) {
	if err != nil && statementLost(c.core.dialect, err) {
		c.lostPending = true
	}
}
