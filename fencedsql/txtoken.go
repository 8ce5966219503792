package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// recordTxToken tells the database the largest token the open transaction carries,
// where the dialect records deletions by it (dialect.TxTokenRecorder: PostgreSQL), once
// statements of the transaction carried two different tokens: a lease joined and
// raised it ("Only a lease raises a transaction's token", G13), or statements of a
// transaction begun without a binding carried their own. A row the transaction wrote
// under the earlier token and deletes later by other means than a fenced DELETE of it
// (a cascade, a cross-partition move) is then tombstoned at no less than the raised
// token (docs/design.md G9; red-team rt59b F2, F3). One statement at that moment, and
// again after a savepoint statement (sessionReverted may have reverted it); nothing in
// a transaction of one token. A failure breaks the transaction: its Commit rolls back.
func (c *conn) recordTxToken(ctx context.Context, tok uint64) error {
	st := c.tx
	r, ok := c.core.dialect.(dialect.TxTokenRecorder)
	if st == nil || !ok || tok == 0 || tok > math.MaxInt64 {
		return nil // tokenFor refuses a token above the largest BIGINT
	}
	if st.sentTok != 0 && tok != st.sentTok {
		st.manyTok = true
	}
	st.sentTok = max(st.sentTok, tok)
	if !st.manyTok || st.sentTok <= st.recordedTok {
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
		err = fmt.Errorf("fencedsql: statement not sent: recording the transaction's token %d for its deletions failed: %w", st.sentTok, c.core.mapPassErr(nil, err))
		c.breakTx(err)
		return err
	}
	st.recordedTok = st.sentTok
	return nil
}
