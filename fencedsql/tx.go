package fencedsql

import (
	"database/sql/driver"
	"fmt"
)

// tx wraps a driver transaction. Commit refuses when the bound lease was lost: the
// transaction is rolled back and Commit returns an error wrapping
// lockclient.ErrLeaseLost. This is defence in depth; the fencing token is what makes a
// late write safe.
type tx struct {
	raw driver.Tx
	c   *conn
	st  *txState
}

func (t *tx) end() {
	if t.c.tx == t.st {
		t.c.tx = nil
	}
}

// Commit implements driver.Tx.
func (t *tx) Commit() error {
	defer t.end()
	if err := t.st.leaseLost(); err != nil {
		_ = t.raw.Rollback()
		return err
	}
	if err := t.st.broken; err != nil {
		_ = t.raw.Rollback()
		return fmt.Errorf("fencedsql: transaction rolled back: %w", err)
	}
	return t.c.core.mapPassErr(t.raw.Commit())
}

// Rollback implements driver.Tx.
func (t *tx) Rollback() error {
	defer t.end()
	return t.raw.Rollback()
}
