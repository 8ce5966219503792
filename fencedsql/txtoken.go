package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// The transaction's recorded token (dialect.TxTokenRecorder: PostgreSQL). Once
// statements of a transaction carried two different tokens — a lease joined and raised
// it ("Only a lease raises a transaction's token", G13), or statements of a transaction
// begun without a binding carried their own — the wrapper tells the database the
// largest, and the database tombstones the rows the transaction deletes by other means
// than a fenced DELETE of them (a cascade, a cross-partition move) at no less than it
// (docs/design.md G9; red-team rt59b F2, F3). Nothing is sent in a transaction of one
// token.
//
// The database keeps the token in a transaction-local setting, which the server
// reverts by itself and which code the wrapper cannot read may reset: ROLLBACK TO
// SAVEPOINT undoes a setting made after the savepoint, RESET ALL clears it, and so
// may a user's function called from a SELECT or a trigger of an INSERT (red-team
// rt60a F1, F2; rt60c F1, F3). So, once a transaction's statements carried two
// tokens, the token is recorded before every statement sent, and before its COMMIT,
// whose deferred triggers may delete rows (rt60c F2): one statement each, in such a
// transaction only, sent once per statement at the last step before it (sendAhead; a
// batch once, before it is sent: txTokenNow). A text or batch in which a statement that may revert it is
// followed by more statements in the same round trip is refused (rt60a F3). A
// savepoint statement itself is sent without it: it deletes nothing, and in a
// transaction a failed statement aborted it is the only statement the server runs,
// where the recording would fail (rt60a F5). Left open (docs/design.md, Known open
// findings): one statement whose own function or trigger resets the setting and then
// deletes a row this transaction fenced under an earlier token.

// noteTxToken notes tok, the token a statement of the open transaction carries
// (checkLease), before anything is sent.
func (c *conn) noteTxToken(tok uint64) {
	st := c.tx
	if st == nil || tok == 0 || tok > math.MaxInt64 {
		return // tokenFor refuses a token above the largest BIGINT
	}
	if st.sentTok != 0 && tok != st.sentTok {
		st.manyTok = true
	}
	st.sentTok = max(st.sentTok, tok)
}

// txTokenRefusal refuses (ErrUnsupported), in a transaction whose statements carried
// two tokens, query of plan p when it holds a statement that may revert the record
// followed by more statements in the same round trip: in its own text
// (plan.Planner.SeveralStatements), or as a batch statement followed by others (more).
// It sends nothing: admit runs it for every statement planned on the connection, the
// paths that do not pass through admit by syncTxToken.
func (c *conn) txTokenRefusal(p *plan.Plan, query string, more bool) error {
	if !c.recordsTxToken() || p == nil || !revertsTxToken(p) {
		return nil
	}
	if more || c.core.rw.SeveralStatements(query) {
		return c.core.refused(&UnsupportedError{Reason: txTokenRevertReason})
	}
	return nil
}

// recordTxToken records the transaction's largest token in the database before a
// statement of plan p (nil: the transaction's COMMIT, or a COPY) is sent, when its
// statements carried two tokens; nothing before a savepoint statement. Each path
// calls it once per statement, after the judgements of its text (admit, the bound
// text) and before anything of the statement is sent; a guarded statement's argument
// checks (guardedArgs) may still refuse it after, which leaves the record as it was.
// A failed recording is returned with nothing sent ("statement not sent"); the
// transaction goes on, and the next statement records again.
func (c *conn) recordTxToken(ctx context.Context, p *plan.Plan) error {
	if !c.recordsTxToken() || (p != nil && p.TxOnly != nil) {
		return nil
	}
	r := c.core.dialect.(dialect.TxTokenRecorder)
	st := c.tx
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(st.sentTok)}}
	_, err := c.rawExec(ctx, r.TxTokenStatement(), args)
	if err == driver.ErrSkip {
		var cs *cachedStmt
		if cs, err = c.acquireOnce(ctx, r.TxTokenStatement()); err == nil {
			_, err = stmtExec(ctx, cs.st, args)
			if cerr := c.release(cs, err); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("fencedsql: statement not sent: recording the transaction's token %d for its deletions failed: %w", st.sentTok, c.core.mapPassErr(nil, err))
	}
	return nil
}

// syncTxToken is txTokenRefusal, then recordTxToken: for a statement whose path does
// not pass through admit (a prepared statement's execution), or a batch statement,
// whose place in the batch (more) admit does not know.
func (c *conn) syncTxToken(ctx context.Context, p *plan.Plan, query string, more bool) error {
	if err := c.txTokenRefusal(p, query, more); err != nil {
		return err
	}
	return c.recordTxToken(ctx, p)
}

// txTokenMark is what recordTxToken records in the open transaction, and whether it
// records at all.
type txTokenMark struct {
	tok  uint64
	many bool
}

// txTokenNow returns the open transaction's txTokenMark (zero outside one). Every
// recording of a batch is sent before the batch is: a batch statement after the first
// (Batch: after) records only when its own leases changed the mark (a lease joined in
// the middle of the batch), since what the one before it recorded still holds when the
// batch is sent.
func (c *conn) txTokenNow() txTokenMark {
	if c.tx == nil {
		return txTokenMark{}
	}
	return txTokenMark{c.tx.sentTok, c.tx.manyTok}
}

// recordsTxToken reports whether the open transaction's statements carried two
// tokens on a dialect that records the transaction's token.
func (c *conn) recordsTxToken() bool {
	_, ok := c.core.dialect.(dialect.TxTokenRecorder)
	return ok && c.tx != nil && c.tx.manyTok
}

// revertsTxToken reports whether a statement of plan p may revert or clear the
// transaction's recorded token: a savepoint statement (ROLLBACK TO), or one that may
// change or reset the session (RESET ALL, a DO block, a routine running SQL).
func revertsTxToken(p *plan.Plan) bool { return p.TxOnly != nil || p.ResetsSession }

const txTokenRevertReason = "a savepoint statement, or one that may change or reset the session (RESET ALL, DO, a routine), followed by other statements in one text or batch, in a transaction whose statements carried two tokens (a second lease raised it): the server may revert the transaction's recorded token before the statements after it run, and a row they delete would be tombstoned below the raised token; send it alone, or as the batch's last statement"
