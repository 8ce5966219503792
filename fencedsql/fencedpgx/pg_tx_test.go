// Conformance cases on PostgreSQL: a lease lost at commit, savepoints.

package fencedpgx_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/jackc/pgx/v5"
)

type lostLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *lostLease) Token() uint64         { return l.tok }
func (l *lostLease) Lost() <-chan struct{} { return l.lost }
func (l *lostLease) Err() error {
	select {
	case <-l.lost:
		return lockclient.ErrLeaseLost
	default:
		return nil
	}
}

func testLeaseLost(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	l := &lostLease{tok: 6, lost: make(chan struct{})}
	tx, err := e.db.Begin(fencedsql.WithLease(e.ctx, l))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	close(l.lost)
	err = tx.Commit(e.ctx)
	wantErr(t, err, lockclient.ErrLeaseLost)
	if err := tx.Rollback(e.ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("Rollback after Commit: %v", err)
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testSavepoint(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	tx, err := e.db.Begin(tok(e.ctx, 6))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tx.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Exec(e.ctx, debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := sp.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, debit, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{98, 6, 2})
}
