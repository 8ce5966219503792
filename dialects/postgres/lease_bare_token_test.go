package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestStaleLeaseJoiningBareTokenTxRefused: a stale lease (expired at the service,
// re-granted, its row rewritten by the new holder) joining a transaction begun under a
// larger bare token (WithToken) is confirmed at its lock service before the statement
// is sent, and refused with ErrLeaseLost; it used to write with the transaction's token
// over the new holder's row (red-team rt46e F1; the SQLite variants are in
// fencedsql/lease_bare_token_confirm_test.go).
func TestStaleLeaseJoiningBareTokenTxRefused(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "INSERT INTO accounts (id, balance) VALUES (7, 0)")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	svc := memlock.New()
	ttl := 30 * time.Second
	c1 := lockclient.New(svc, lockclient.WithTTL(ttl))
	c2 := lockclient.New(svc, lockclient.WithTTL(ttl))
	t.Cleanup(func() { _ = c1.Close(context.Background()); _ = c2.Close(context.Background()) })
	l1, err := c1.Acquire(ctx, "bare-token-tx:1")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(ttl + time.Second)
	n1, err := c2.Acquire(ctx, "bare-token-tx:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, n1), "UPDATE accounts SET balance = 111 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	l2, err := c1.Acquire(ctx, "bare-token-tx:2")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, l2.Token()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	_, err = tx.ExecContext(fencedsql.WithLease(ctx, l1), "UPDATE accounts SET balance = balance - 50 WHERE id = 7")
	if err == nil {
		err = tx.Commit()
	}
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Errorf("stale lease (token %d) joined a tx of bare token %d: %v, want ErrLeaseLost", l1.Token(), l2.Token(), err)
	}
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 7").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if bal != 111 || tok != int64(n1.Token()) {
		t.Errorf("row 7: balance %d token %d, want 111 token %d (stale write landed)", bal, tok, n1.Token())
	}
}
