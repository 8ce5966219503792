package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSQLiteLockingReadRefusedBeforeSending (red-team rt31c F6): SQLite has no FOR UPDATE (G10:
// "write the row first"); a SELECT … FOR UPDATE sent with a token in a transaction was
// planned as a claim, whose fencing UPDATE stamped the row before SQLite rejected the
// read with a raw syntax error, and the transaction was lost. It is refused with
// ErrUnsupported before anything is sent: nothing stamped, the transaction usable.
func TestSQLiteLockingReadRefusedBeforeSending(t *testing.T) {
	lite := testdb.SQLite(t)
	admin := testdb.Open(t, "sqlite", lite, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`, `INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100)`)
	db := testdb.Open(t, "fenced-sqlite", lite+"&fenced_tables=accounts")
	ctx := fencedsql.WithToken(context.Background(), 10)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 50 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	_, qerr := tx.QueryContext(ctx, `SELECT balance FROM accounts WHERE id = 1 FOR UPDATE`)
	var tok, ver int64
	if err := tx.QueryRowContext(ctx, `SELECT fence_token, version FROM accounts WHERE id = 1`).Scan(&tok, &ver); err != nil {
		t.Fatal(err)
	}
	cerr := tx.Commit()
	var bal2 int64
	if err := admin.QueryRow(`SELECT balance FROM accounts WHERE id = 2`).Scan(&bal2); err != nil {
		t.Fatal(err)
	}
	if errors.Is(qerr, fencedsql.ErrUnsupported) && tok == 0 && cerr == nil && bal2 == 50 {
		return
	}
	t.Errorf("SQLite SELECT … FOR UPDATE with a token: err = %v (ErrUnsupported: %v); row 1 inside the transaction: token %d, version %d; "+
		"Commit = %v, the earlier write kept: %v; want ErrUnsupported, nothing sent (token 0, version 0), the transaction committing its earlier write",
		qerr, errors.Is(qerr, fencedsql.ErrUnsupported), tok, ver, cerr, bal2 == 50)
}
