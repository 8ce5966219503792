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
// transaction only. A text or batch in which a statement that may revert it is
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

// syncTxToken records the transaction's largest token in the database before query,
// of plan p (nil: the transaction's COMMIT, or a COPY), is sent, when its statements
// carried two tokens. It refuses (ErrUnsupported) a text of several statements that
// may revert the record (more: a batch statement followed by others), and sends
// nothing before a savepoint statement. A failed recording is returned with nothing
// sent ("statement not sent"); the transaction goes on, and the next statement
// records again.
func (c *conn) syncTxToken(ctx context.Context, p *plan.Plan, query string, more bool) error {
	st := c.tx
	r, ok := c.core.dialect.(dialect.TxTokenRecorder)
	if st == nil || !ok || !st.manyTok {
		return nil
	}
	if p != nil && revertsTxToken(p) && (more || c.core.rw.SeveralStatements(query)) {
		return c.core.refused(&UnsupportedError{Reason: txTokenRevertReason})
	}
	if p != nil && p.TxOnly != nil {
		return nil
	}
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

// revertsTxToken reports whether a statement of plan p may revert or clear the
// transaction's recorded token: a savepoint statement (ROLLBACK TO), or one that may
// change or reset the session (RESET ALL, a DO block, a routine running SQL).
func revertsTxToken(p *plan.Plan) bool { return p.TxOnly != nil || p.ResetsSession }

const txTokenRevertReason = "a savepoint statement, or one that may change or reset the session (RESET ALL, DO, a routine), followed by other statements in one text or batch, in a transaction whose statements carried two tokens (a second lease raised it): the server may revert the transaction's recorded token before the statements after it run, and a row they delete would be tombstoned below the raised token; send it alone, or as the batch's last statement"
