package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A fencing column qualified by a name that is not the target's own (another table,
// the table's name after an alias, an undeclared alias, a foreign database) makes
// MariaDB reject the statement (1054 Unknown column — checked on the plain connection
// first). Through the fenced pool it is refused before sending (ErrUnsupported) and
// nothing is written: dropping the item, as the planner did, ran the rest of the broken
// statement (red-team rt47f F1). Qualified by the target's own name or alias, the item
// is the column and is dropped: the statement runs with the wrapper's token.
func TestForeignQualifiedFencingColumnRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE other (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id) VALUES (1)")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	state := func() (n int64) {
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) + COALESCE(SUM(balance), 0) + COALESCE(SUM(fence_token), 0) FROM accounts").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, q := range []string{
		"UPDATE accounts SET balance = 11, other.fence_token = 99 WHERE id = 1",
		"UPDATE accounts AS a SET balance = 12, accounts.fence_token = 99 WHERE id = 1",
		"UPDATE accounts SET balance = 13, x.y.version = 99 WHERE id = 1",
		"UPDATE accounts SET balance = 13, ACCOUNTS.fence_token = 99 WHERE id = 1",
		"INSERT INTO accounts (id, balance, other.fence_token) VALUES (2, 14, 99)",
		"INSERT INTO accounts SET id = 3, balance = 15, a.fence_token = 99",
		"INSERT INTO accounts (id, balance) VALUES (1, 16) ON DUPLICATE KEY UPDATE balance = 16, other.fence_token = 99",
		"INSERT INTO accounts (id, balance, nodb.accounts.version) VALUES (4, 17, 99)",
	} {
		if _, err := raw.ExecContext(ctx, q); err == nil {
			t.Fatalf("%q ran on the plain connection; the case assumes the server rejects it", q)
		}
		before := state()
		_, err := db.ExecContext(fencedsql.WithToken(ctx, uint64(10+i)), q)
		if after := state(); err == nil || after != before {
			t.Errorf("%q through the fenced pool: err = %v, table changed: %v; want a refusal and nothing written", q, err, after != before)
		} else if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q: err = %v, want ErrUnsupported before sending", q, err)
		}
	}
	for _, q := range []string{
		"UPDATE accounts AS a SET balance = 20, a.fence_token = 99 WHERE id = 1",
		"INSERT INTO accounts (id, balance) VALUES (1, 21) ON DUPLICATE KEY UPDATE balance = 21, `accounts`.`fence_token` = 99",
	} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), q); err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		var tok int64
		if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok); err != nil {
			t.Fatal(err)
		}
		if tok != 50 {
			t.Errorf("%q: fence_token = %d, want the wrapper's token 50", q, tok)
		}
	}
}
