package mysql_test

// Red-team rt15c (failed on e10017f): FETCH FIRST and a parenthesized ORDER BY alias in
// a MariaDB locking read are refused with a token, never claimed by another order.

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRT15cFetchFirstClaimMariaDB: MariaDB (10.6+) takes FETCH FIRST n ROWS ONLY in a
// SELECT; the planner reads it as part of the ORDER BY clause and copies it into the
// claiming UPDATE … ORDER BY …, which does not take it. The claim must succeed with
// the plain read's row, or be refused with ErrUnsupported — not fail with the server's
// raw syntax error.
func TestRT15cFetchFirstClaimMariaDB(t *testing.T) {
	raw, fenced := rt15cAccounts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const q = `SELECT id FROM accounts WHERE balance < 50 ORDER BY balance FETCH FIRST 1 ROW ONLY FOR UPDATE`
	var plainID int64
	if err := raw.QueryRowContext(ctx, q).Scan(&plainID); err != nil {
		t.Fatalf("plain read: %v", err)
	}
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var got int64
	err = tx.QueryRowContext(ctx, q).Scan(&got)
	t.Logf("claim: %d err %v; plain read %d", got, err, plainID)
	switch {
	case err == nil && got != plainID:
		t.Errorf("claim returned %d; the plain read returns %d", got, plainID)
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Errorf("claim failed with %v: want the plain read's row %d or ErrUnsupported", err, plainID)
	}
}

// TestRT15cParenthesizedOrderByAliasMariaDB: MariaDB resolves a parenthesized ORDER BY
// item `(id)` to the select-list alias id, as the bare `id` (checked: `ORDER BY (a)`
// orders by the alias, `ORDER BY a + 0` by the column). orderByOutput refuses only the
// bare word, so the claiming `UPDATE … ORDER BY (id) LIMIT 1` orders by the column id
// and stamps another row than the plain read returns; the read restricted to the token
// then returns the stamped row.
func TestRT15cParenthesizedOrderByAliasMariaDB(t *testing.T) {
	raw, fenced := rt15cAccounts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const q = `SELECT id AS k, balance AS id FROM accounts WHERE balance < 50 ORDER BY (id) LIMIT 1 FOR UPDATE`
	var plainK, plainB int64
	if err := raw.QueryRowContext(ctx, q).Scan(&plainK, &plainB); err != nil {
		t.Fatalf("plain read: %v", err)
	}
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var k, b int64
	err = tx.QueryRowContext(ctx, q).Scan(&k, &b)
	var stamped []int64
	if err == nil {
		rs, qerr := tx.QueryContext(ctx, `SELECT id FROM accounts WHERE fence_token = 10 ORDER BY id`)
		if qerr != nil {
			t.Fatal(qerr)
		}
		for rs.Next() {
			var id int64
			_ = rs.Scan(&id)
			stamped = append(stamped, id)
		}
		rs.Close()
	}
	t.Logf("claim: row %d err %v, stamped %v; plain read row %d", k, err, stamped, plainK)
	switch {
	case err == nil && (k != plainK || len(stamped) != 1 || stamped[0] != plainK):
		t.Errorf("claim returned row %d and stamped %v; the plain read returns row %d", k, stamped, plainK)
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Errorf("claim failed with %v: want the plain read's row %d or ErrUnsupported", err, plainK)
	}
}

// rt15cAccounts creates a guarded accounts table with rows 1..3 (balances 9, 1, 5,
// token 1) in a fresh MariaDB database and returns the plain and the fenced pool.
func rt15cAccounts(t *testing.T) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token) VALUES (1, 9, 1), (2, 1, 1), (3, 5, 1)`)
	fenced = testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	return raw, fenced
}
