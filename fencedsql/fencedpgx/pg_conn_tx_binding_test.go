package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A statement sent on a fencedpgx.Conn while a transaction is open on it runs inside
// that transaction (pgx allows it); one whose context binds another token than the
// transaction's is refused with ErrUnsupported, nothing sent, rather than written under
// the transaction's token (a token-1 write over a row of token 3 because the open Tx
// holds 4). Red-team pass rt10x, F2.
func TestConnExecInsideTxRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, plainAccounts, "INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 3)")
	pc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	tx, err := c.Begin(fencedsql.WithToken(ctx, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(fencedsql.WithToken(ctx, 1), "UPDATE accounts SET balance = 999 WHERE id = 1"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("token-1 write on the Conn while a token-4 Tx is open: %v, want ErrUnsupported", err)
	}
	if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = 400 WHERE id = 1"); err != nil {
		t.Fatalf("the Tx's own write: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if bal != 400 || tok != 4 {
		t.Errorf("row: balance %d, token %d; want 400, 4", bal, tok)
	}
}
