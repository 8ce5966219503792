package fencedpgx_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// fencedpgx shares the conn layer's judgement of a locking read through a view over a
// guarded table: refused with a token (ErrUnsupported) on its statement path and in a
// batch, passing without one.
func TestLockingReadThroughViewPgx(t *testing.T) {
	e := newPGEnv(t, "cache_statement")
	e.seed(5, 1)
	if _, err := e.raw.Exec(e.ctx, "CREATE VIEW av AS SELECT id, balance FROM accounts"); err != nil {
		t.Fatal(err)
	}
	const q = "SELECT id, balance FROM av WHERE id = $1 FOR UPDATE"
	tx, err := e.db.Begin(tok(e.ctx, 6))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, q, 1); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("statement with a token: %v, want ErrUnsupported", err)
	}
	_ = tx.Rollback(e.ctx)
	b := &pgx.Batch{}
	b.Queue(q, 1)
	if err := e.db.SendBatch(tok(e.ctx, 6), b).Close(); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("batch with a token: %v, want ErrUnsupported", err)
	}
	if _, err := e.db.Exec(e.ctx, q, 1); err != nil {
		t.Errorf("without a token: %v", err)
	}
	if got := e.row(1); got.token != 5 {
		t.Errorf("row 1 token %d, want 5 (nothing claimed)", got.token)
	}
}
