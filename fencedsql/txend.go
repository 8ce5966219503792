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
// its errors are the driver's for the same statement.
func (c *conn) endTx(rt driver.Tx, commit bool) error {
	if e, ok := c.core.dialect.(dialect.TxEnder); ok && c.core.cfg.schemaCheck {
		_, err := c.execOwn(context.Background(), e.EndTx(commit))
		return err
	}
	if commit {
		return rt.Commit()
	}
	return rt.Rollback()
}
