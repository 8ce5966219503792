package fencedsql

import (
	"context"
	"database/sql/driver"

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
func (c *conn) endTx(rt driver.Tx, commit bool) error {
	if e, ok := c.core.dialect.(dialect.TxEnder); ok && c.core.cfg.schemaCheck {
		_, err := c.execOwn(context.Background(), e.EndTx(commit))
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
