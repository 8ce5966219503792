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

// TestSavepointRollbackRechecksTables: a savepoint's Rollback (pgx sends ROLLBACK TO
// SAVEPOINT itself) reverts a SET search_path made inside it; the table checks made
// under the savepoint's path must not be kept for the path the transaction returns
// to. s2.accounts has a REAL token column (refused by the lint): the write there after
// the rollback is refused with ErrSchema, as before the savepoint.
func TestSavepointRollbackRechecksTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	if _, err := raw.Exec(ctx, plainAccounts+`INSERT INTO accounts (id, balance) VALUES (1, 100);
		CREATE SCHEMA s2;
		CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token REAL NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
		INSERT INTO s2.accounts VALUES (1, 100, 16777217, 0)`); err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	stale := fencedsql.WithToken(ctx, 16777216)
	const write = "UPDATE accounts SET balance = 999 WHERE id = 1"
	if _, err := c.Exec(ctx, "SET search_path = s2"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(stale, write); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("control: write to s2.accounts: %v, want ErrSchema", err)
	}
	tx, err := c.Begin(stale)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Exec(ctx, "SET search_path = public"); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Exec(ctx, "UPDATE accounts SET balance = balance WHERE id = 1"); err != nil {
		t.Fatalf("write to public.accounts in the savepoint: %v", err)
	}
	if err := sp.Rollback(ctx); err != nil { // ROLLBACK TO SAVEPOINT: the path is s2 again
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, write); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("the write to s2.accounts after the savepoint's rollback: %v, want ErrSchema", err)
	}
}
