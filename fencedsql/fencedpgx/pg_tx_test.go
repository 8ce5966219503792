// Conformance cases on PostgreSQL: a lease lost at commit, savepoints.

package fencedpgx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
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

// pgx.TxOptions.BeginQuery and CommitQuery are SQL pgx sends verbatim in place of
// BEGIN and COMMIT, which the wrapper would never plan: BeginTx refuses them
// (ErrUnsupported) on a Pool and a Conn, sending nothing. They let an unfenced UPDATE
// lower a row's token, and a SET LOCAL synchronous_commit = off the wrapper refuses
// as a statement through (red-team F2). The other options still work.
func TestBeginTxQueryOptionsRefused(t *testing.T) {
	ctx, raw, db := freshPG(t, plainAccounts+`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 50, 3)`)
	pc, err := raw.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Release()
	conn, err := fencedpgx.WrapConn(pc.Conn(), fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	tctx := tok(ctx, 60)
	for _, opts := range []pgx.TxOptions{
		{BeginQuery: "BEGIN; UPDATE accounts SET balance = 0, fence_token = 1 WHERE id = 1"},
		{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"},
		{CommitQuery: "UPDATE accounts SET balance = 7, fence_token = 2 WHERE id = 1; COMMIT"},
	} {
		for name, b := range map[string]interface {
			BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
		}{"pool": db, "conn": conn} {
			tx, err := b.BeginTx(tctx, opts)
			if err == nil {
				_ = tx.Commit(ctx)
				t.Fatalf("%s: BeginTx(%+v) began a transaction, want ErrUnsupported", name, opts)
			}
			wantErr(t, err, fencedsql.ErrUnsupported)
		}
	}
	var a acct
	if err := raw.QueryRow(ctx, "SELECT balance, fence_token, version FROM accounts WHERE id = 1").Scan(&a.balance, &a.token, &a.version); err != nil {
		t.Fatal(err)
	}
	wantRow(t, a, acct{100, 50, 3})
	tx, err := conn.BeginTx(tctx, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadWrite})
	if err != nil {
		t.Fatalf("BeginTx with pgx's own options: %v", err)
	}
	defer tx.Rollback(ctx)
	var iso string
	if err := tx.QueryRow(ctx, "SELECT current_setting('transaction_isolation')").Scan(&iso); err != nil || iso != "serializable" {
		t.Fatalf("isolation %q, %v", iso, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
