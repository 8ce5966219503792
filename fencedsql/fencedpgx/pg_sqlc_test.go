// Conformance case on PostgreSQL: sqlc-generated queries through fencedpgx.

package fencedpgx_test

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx/internal/sqlcpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// sqlc-shaped code for pgx/v5 takes the fenced pool (and its transactions) unchanged.
func testSqlc(t *testing.T, e *pgEnv) {
	q := sqlcpgx.New(e.db)
	ctx := tok(e.ctx, 5)
	bob := pgtype.Text{String: "bob", Valid: true}
	for id := int64(1); id <= 3; id++ {
		if err := q.CreateAccount(ctx, sqlcpgx.CreateAccountParams{ID: id, Owner: pgtype.Text{String: "o" + string(rune('0'+id)), Valid: true}, Balance: 100}); err != nil {
			t.Fatal(err)
		}
	}
	err := q.CreateAccount(e.ctx, sqlcpgx.CreateAccountParams{ID: 9, Balance: 1})
	wantErr(t, err, fencedsql.ErrNoToken)
	if n, err := q.AddBalance(tok(e.ctx, 6), sqlcpgx.AddBalanceParams{Balance: 5, ID: 1}); err != nil || n != 1 {
		t.Fatalf("AddBalance: %d %v", n, err)
	}
	_, err = q.AddBalance(ctx, sqlcpgx.AddBalanceParams{Balance: 5, ID: 1})
	wantErr(t, err, fencedsql.ErrFenced)
	a, err := q.UpdateBalanceReturning(tok(e.ctx, 7), sqlcpgx.UpdateBalanceReturningParams{Balance: 50, ID: 2})
	if err != nil || a.Balance != 50 || a.FenceToken != 7 || a.Version != 2 {
		t.Fatalf("UpdateBalanceReturning: %+v %v", a, err)
	}
	_, err = q.UpdateBalanceReturning(ctx, sqlcpgx.UpdateBalanceReturningParams{Balance: 1, ID: 2})
	wantErr(t, err, fencedsql.ErrFenced)
	if err := q.UpsertAccount(tok(e.ctx, 8), sqlcpgx.UpsertAccountParams{ID: 3, Owner: bob, Balance: 3}); err != nil {
		t.Fatal(err)
	}
	// In a transaction: WithTx takes the fenced pgx.Tx.
	tx, err := e.db.Begin(tok(e.ctx, 9))
	if err != nil {
		t.Fatal(err)
	}
	qtx := q.WithTx(tx)
	got, err := qtx.GetAccountForUpdate(e.ctx, 1)
	if err != nil || got.Balance != 105 {
		t.Fatalf("GetAccountForUpdate: %+v %v", got, err)
	}
	if err := qtx.DeleteAccount(e.ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	all, err := q.ListAccounts(e.ctx)
	if err != nil || len(all) != 2 || all[0].FenceToken != 9 {
		t.Fatalf("ListAccounts: %+v %v", all, err)
	}
	err = q.DeleteAccount(tok(e.ctx, 8), 1) // claimed by 9
	wantErr(t, err, fencedsql.ErrFenced)
	// :batchexec with a stale row in it: every result fails, nothing applied.
	var errs []error
	q.AddBalanceBatch(tok(e.ctx, 8), []sqlcpgx.AddBalanceBatchParams{{Balance: 1, ID: 2}, {Balance: 1, ID: 1}}).Exec(func(i int, err error) { errs = append(errs, err) })
	if len(errs) != 2 || !errors.Is(errs[1], fencedsql.ErrFenced) {
		t.Fatalf("batch errors: %v", errs)
	}
	if a, _ := q.GetAccount(e.ctx, 2); a.Balance != 50 {
		t.Fatalf("a failed batch applied: %+v", a)
	}
	errs = nil
	q.AddBalanceBatch(tok(e.ctx, 9), []sqlcpgx.AddBalanceBatchParams{{Balance: 1, ID: 2}, {Balance: 1, ID: 1}}).Exec(func(i int, err error) { errs = append(errs, err) })
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch: %v", errs)
	}
	// :copyfrom: refused into the guarded table, allowed elsewhere.
	_, err = q.CopyAccounts(ctx, []sqlcpgx.CopyAccountsParams{{ID: 10, Balance: 1}})
	wantErr(t, err, fencedsql.ErrUnsupported)
	if n, err := q.CopyAuditLog(e.ctx, []sqlcpgx.CopyAuditLogParams{{AccountID: 1}, {AccountID: 2}}); err != nil || n != 2 {
		t.Fatalf("CopyAuditLog: %d %v", n, err)
	}
	if _, err := q.GetAccount(e.ctx, 3); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("GetAccount of a deleted row: %v", err)
	}
}
