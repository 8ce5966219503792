package mysql_test

// Claims (G10) under MariaDB's EXPLAIN (red-team rt40e F1).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestExplainLockingReadRefusedWithToken (red-team rt40e F1). The planner passed MySQL/MariaDB's EXPLAIN / DESCRIBE / DESC of a locking
// read as "a plan that is only shown runs nothing" (plan/explain.go). But MariaDB's
// optimizer reads a const table, one selected by an equality on its primary or a unique
// key, while it plans, and under FOR UPDATE / LOCK IN SHARE MODE it reads that row with
// the lock. So in a token-bound transaction `EXPLAIN SELECT … FROM accounts WHERE id = 1
// FOR UPDATE` locks the row and stamps nothing: a locking read of a guarded row that is
// not claimed (G10). The correct behaviour is to refuse it (ErrUnsupported, as EXPLAIN
// ANALYZE / ANALYZE of a locking read already is), or to claim it; it must never hold
// the row's lock unclaimed.
func TestExplainLockingReadRefusedWithToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE rt40e_acc (id BIGINT PRIMARY KEY, code VARCHAR(10) NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE KEY rt40e_code (code)) ENGINE=InnoDB",
		"CREATE TABLE rt40e_plain (id BIGINT PRIMARY KEY, acc BIGINT) ENGINE=InnoDB",
		"INSERT INTO rt40e_plain VALUES (1, 1)")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=rt40e_acc")
	for _, q := range []string{
		"EXPLAIN SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE",
		"EXPLAIN EXTENDED SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE",
		"EXPLAIN PARTITIONS SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE",
		"EXPLAIN FORMAT=JSON SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE",
		"DESCRIBE SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE",
		"desc select id from rt40e_acc where id = 1 for update",
		"EXPLAIN SELECT id FROM rt40e_acc WHERE code = 'a' FOR UPDATE",
		"EXPLAIN SELECT * FROM rt40e_acc WHERE id = 1 LOCK IN SHARE MODE",
		"EXPLAIN SELECT id FROM rt40e_acc WHERE id = ? FOR UPDATE",
		// The locking subquery of a statement that names the guarded table only there:
		// MariaDB evaluates the uncorrelated subquery while it plans, with its lock.
		"EXPLAIN SELECT p.id FROM rt40e_plain p WHERE p.acc = (SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE)",
		"EXPLAIN INSERT INTO rt40e_plain (id, acc) SELECT 100, id FROM rt40e_acc WHERE id = 1 FOR UPDATE",
		"EXPLAIN UPDATE rt40e_plain SET acc = (SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE) WHERE id = 1",
		"EXPLAIN DELETE FROM rt40e_plain WHERE acc = (SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE)",
		"EXPLAIN (SELECT id FROM rt40e_acc WHERE id = 1 FOR UPDATE)",
	} {
		t.Run(q, func(t *testing.T) {
			testdb.Exec(t, raw, "DELETE FROM rt40e_acc", "INSERT INTO rt40e_acc (id, code) VALUES (1, 'a'), (2, 'b')")
			tctx := fencedsql.WithToken(ctx, 7)
			tx, err := db.BeginTx(tctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			var args []any
			if strings.Contains(q, "?") {
				args = []any{1}
			}
			rows, err := tx.QueryContext(tctx, q, args...)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if errors.Is(err, fencedsql.ErrUnsupported) {
				return // refused before anything was sent: correct
			}
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			// Is row 1 locked by the fenced transaction? A second session's UPDATE waits for
			// at most one second.
			c, err := raw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
				t.Fatal(err)
			}
			_, lockErr := c.ExecContext(ctx, "UPDATE rt40e_acc SET balance = balance WHERE id = 1")
			locked := lockErr != nil
			var tok int64
			if err := tx.QueryRowContext(tctx, "SELECT fence_token FROM rt40e_acc WHERE id = 1").Scan(&tok); err != nil {
				t.Fatal(err)
			}
			if locked && tok != 7 {
				t.Errorf("%s in a transaction bound to token 7 passed, holds row 1's lock (second session: %v) and left it unclaimed (fence_token %d); want ErrUnsupported, or the row claimed with token 7", q, lockErr, tok)
			}
		})
	}
}
