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

// A statement sent on a fencedpgx.Conn while a transaction is open on it would run
// inside that transaction (pgx allows it), under the transaction's binding: a token-1 or
// tokenless write stored with the Tx's token 4. The Conn's own statements are refused
// with ErrUnsupported while its Tx is open, nothing sent; the Tx's go on. Red-team passes
// rt10x F2, rt11f F3.
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
	for name, cctx := range map[string]context.Context{"token 1": fencedsql.WithToken(ctx, 1), "no token": ctx} {
		if _, err := c.Exec(cctx, "UPDATE accounts SET balance = 999 WHERE id = 1"); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("write on the Conn (%s) while a token-4 Tx is open: %v, want ErrUnsupported", name, err)
		}
		if err := c.QueryRow(cctx, "SELECT balance FROM accounts WHERE id = 1 FOR UPDATE").Scan(new(int64)); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("locking read on the Conn (%s) while a Tx is open: %v, want ErrUnsupported", name, err)
		}
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
