// The test double's transaction.

package fencedpgxtest

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tx is a transaction of the mock (pgx.Tx). Begin makes a savepoint, expected as
// another Begin.
type Tx struct {
	m      *DB
	closed bool
}

var _ pgx.Tx = (*Tx)(nil)

func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) { return t.m.BeginTx(ctx, pgx.TxOptions{}) }
func (t *Tx) Commit(context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	e, err := t.m.next(KindCommit, "", nil)
	if err != nil {
		return err
	}
	return e.err
}
func (t *Tx) Rollback(context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	e, err := t.m.next(KindRollback, "", nil)
	if err != nil {
		return err
	}
	return e.err
}
func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.m.CopyFrom(ctx, table, cols, src)
}
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.m.SendBatch(ctx, b)
}
func (t *Tx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.m.Prepare(ctx, name, sql)
}
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.m.Exec(ctx, sql, args...)
}
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.m.Query(ctx, sql, args...)
}
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.m.QueryRow(ctx, sql, args...)
}
func (t *Tx) Conn() *pgx.Conn { return nil }
