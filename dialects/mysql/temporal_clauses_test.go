package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// MariaDB's temporal clauses on a guarded table through the pool (red-team rt50b F3):
// DELETE HISTORY [BEFORE SYSTEM_TIME …] passes and removes history rows only (no
// current row, no tombstone, no fencing column), except on the guards' own tables;
// UPDATE/DELETE … FOR PORTION OF and a claim … FOR SYSTEM_TIME are refused with a
// reason that names the clause (they were refused as a multi-table UPDATE, a join).
func TestTemporalClausesThroughPool(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		"INSERT INTO accounts VALUES (1, 10, 20, 1), (2, 10, 20, 1)",
		"UPDATE accounts SET balance = 50, version = 2 WHERE id = 1",
		"CREATE TABLE fencedsql_tomb_accounts (id INT NOT NULL PRIMARY KEY, fence_token BIGINT NOT NULL) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		"CREATE TABLE periods (id INT NOT NULL, vf DATE NOT NULL, vt DATE NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PERIOD FOR p (vf, vt), PRIMARY KEY (id, vf)) ENGINE=InnoDB",
		"INSERT INTO periods VALUES (1, '2020-01-01', '2021-01-01', 1, 10, 1)")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts,periods")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	count := func(q string) int {
		var n int
		if err := raw.QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT COUNT(*) FROM accounts FOR SYSTEM_TIME ALL"); n != 3 {
		t.Fatalf("rows with history: %d; want 3", n)
	}
	for _, q := range []string{"DELETE HISTORY FROM accounts BEFORE SYSTEM_TIME NOW(6)", "DELETE HISTORY FROM accounts"} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), q); err != nil {
			t.Errorf("%s: %v; want passed (history rows only)", q, err)
		}
	}
	if n := count("SELECT COUNT(*) FROM accounts FOR SYSTEM_TIME ALL"); n != 2 {
		t.Errorf("rows with history after DELETE HISTORY: %d; want the 2 current rows", n)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), "DELETE HISTORY FROM fencedsql_tomb_accounts"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("DELETE HISTORY of a tombstone table: %v; want ErrUnsupported", err)
	}
	for _, c := range []struct{ q, want string }{
		{"UPDATE periods FOR PORTION OF p FROM '2020-03-01' TO '2020-04-01' SET balance = 99 WHERE id = 1", "FOR PORTION OF"},
		{"DELETE FROM periods FOR PORTION OF p FROM '2020-03-01' TO '2020-04-01' WHERE id = 1", "PORTION"},
	} {
		_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), c.q)
		if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrUnsupported naming %s", c.q, err, c.want)
		}
	}
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	_, err = tx.QueryContext(fencedsql.WithToken(ctx, 20), "SELECT id, balance FROM accounts FOR SYSTEM_TIME AS OF TIMESTAMP '2000-01-01 00:00:00' WHERE id = 1 FOR UPDATE")
	if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "FOR SYSTEM_TIME") {
		t.Errorf("a claim FOR SYSTEM_TIME AS OF: %v; want ErrUnsupported naming FOR SYSTEM_TIME", err)
	}
}
