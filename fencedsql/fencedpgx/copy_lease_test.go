package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// Every statement under a lost lease — unguarded writes included — fails with
// ErrLeaseLost before anything is sent, and so does CopyFrom into an unguarded table
// (a red-team pass: it copied the rows, committed at once on the pool).
func TestCopyFromLostLease(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
		CREATE TABLE ledger (account_id BIGINT NOT NULL, amount BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	db, err := fencedpgx.New(pool, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(5*time.Second))
	lease, err := locks.Acquire(ctx, "acc-1")
	if err != nil {
		t.Fatal(err)
	}
	// A live lease copies.
	live := fencedsql.WithLease(ctx, lease)
	if n, err := db.CopyFrom(live, pgx.Identifier{"ledger"}, []string{"account_id", "amount"}, pgx.CopyFromRows([][]any{{1, 1}})); err != nil || n != 1 {
		t.Fatalf("CopyFrom under a live lease: %d, %v", n, err)
	}
	_ = locks.Close(ctx) // every lease of the client is lost
	n, err := db.CopyFrom(live, pgx.Identifier{"ledger"}, []string{"account_id", "amount"}, pgx.CopyFromRows([][]any{{1, 5}, {1, 6}}))
	var rows int
	if qerr := pool.QueryRow(ctx, `SELECT count(*) FROM ledger`).Scan(&rows); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, lockclient.ErrLeaseLost) || rows != 1 {
		t.Fatalf("CopyFrom under a lost lease: copied %d, err %v, ledger holds %d rows; want ErrLeaseLost and nothing copied", n, err, rows)
	}
}
