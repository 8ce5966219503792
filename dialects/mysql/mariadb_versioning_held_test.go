package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// MariaDB system versioning against the guards (attacks red-team rt50b found held):
// claims naming FOR SYSTEM_TIME are refused; a system-versioned guarded table keeps G9 (plain and pool deletes record tombstones, stale re-inserts
// and re-inserts from history are refused, REPLACE/upsert displacing through a UNIQUE
// index records the displacer's token); clientFoundRows=true changes no claim count.

func TestClaimForSystemTimeRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB WITH SYSTEM VERSIONING",
		"INSERT INTO accounts VALUES (1, 10, 20, 1)")
	time.Sleep(20 * time.Millisecond)
	var asof string
	if err := raw.QueryRow("SELECT CAST(NOW(6) AS CHAR)").Scan(&asof); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	testdb.Exec(t, raw, "UPDATE accounts SET balance = 50, version = 2 WHERE id = 1")
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	ctx = fencedsql.WithToken(ctx, 20)
	for _, q := range []string{
		"SELECT id, balance FROM accounts FOR SYSTEM_TIME AS OF TIMESTAMP '" + asof + "' WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM accounts FOR SYSTEM_TIME AS OF '" + asof + "' WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM accounts FOR SYSTEM_TIME ALL WHERE id = 1 AND balance = 10 FOR UPDATE",
		"SELECT id, balance FROM accounts FOR SYSTEM_TIME BETWEEN TIMESTAMP '2000-01-01' AND TIMESTAMP '" + asof + "' WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM accounts FOR SYSTEM_TIME AS OF TIMESTAMP '" + asof + "' a WHERE a.id = 1 FOR UPDATE",
		"SELECT id, balance FROM accounts WHERE id = 1 LOCK IN SHARE MODE",
	} {
		func() {
			tx, err := fenced.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			rows, err := tx.QueryContext(ctx, q)
			if err != nil {
				t.Logf("%s: refused: %v", q, err)
				return
			}
			defer rows.Close()
			for rows.Next() {
				var id, balance int64
				if err := rows.Scan(&id, &balance); err != nil {
					t.Fatal(err)
				}
				if balance != 50 {
					t.Errorf("claim %q returned balance %d; the row it locked and stamped has balance 50", q, balance)
				}
			}
			if err := rows.Err(); err != nil {
				t.Logf("%s: rows err: %v", q, err)
			}
		}()
	}
}

func TestVersionedGuardedTableNoResurrection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, dsn := triggerNamesSetup(t, "ledger", "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB WITH SYSTEM VERSIONING")
	if r := triggerNamesReport(t, admin, "ledger"); !r.OK() {
		t.Logf("check of versioned ledger: %q", r.Problems)
	}
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.ExecContext(ctx, "DELETE FROM ledger WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	var n int
	admin.QueryRow("SELECT COUNT(*) FROM fencedsql_tomb_ledger").Scan(&n)
	t.Logf("tombstones: %d", n)
	_, e1 := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO ledger (id, balance, version) VALUES (1, 666, 1)")
	_, e2 := admin.ExecContext(ctx, "INSERT INTO ledger (id, balance, fence_token, version) VALUES (1, 667, 6, 1)")
	_, e3 := admin.ExecContext(ctx, "INSERT INTO ledger (id, balance, fence_token, version) VALUES (2, 667, 6, 1)")
	_, e4 := admin.ExecContext(ctx, "INSERT INTO ledger SELECT id, balance, fence_token, version FROM ledger FOR SYSTEM_TIME ALL WHERE id = 1 LIMIT 1")
	_, e5 := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO ledger (id, balance, version) SELECT id, 1, 1 FROM ledger FOR SYSTEM_TIME ALL WHERE id = 1 LIMIT 1")
	t.Logf("pool %v\nplain %v\nplain2 %v\nplain-hist %v\npool-hist %v", e1, e2, e3, e4, e5)
	admin.QueryRow("SELECT COUNT(*) FROM ledger WHERE id IN (1, 2)").Scan(&n)
	if n != 0 {
		t.Errorf("FAIL-OPEN: %d deleted keys back", n)
	}
}

func TestReplaceDisplacedRecordsToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, versioned := range []string{" WITH SYSTEM VERSIONING", ""} {
		t.Run(versioned, func(t *testing.T) {
			admin, dsn := triggerNamesSetup(t, "ledger", "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, u INT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, UNIQUE KEY (u)) ENGINE=InnoDB"+versioned)
			testdb.Exec(t, admin, "UPDATE ledger SET u = id, version = version + 1")
			for _, q := range []string{
				"REPLACE INTO ledger (id, u, balance, fence_token, version) VALUES (7, 1, 5, 50, 1)",
				"INSERT INTO ledger (id, u, balance, fence_token, version) VALUES (8, 2, 5, 50, 1) ON DUPLICATE KEY UPDATE id = 8, fence_token = 50, version = version + 1",
			} {
				_, err := admin.ExecContext(ctx, q)
				t.Logf("%s: %v", q, err)
			}
			rows, _ := admin.QueryContext(ctx, "SELECT id, fence_token FROM fencedsql_tomb_ledger ORDER BY id")
			for rows.Next() {
				var id, tok int64
				rows.Scan(&id, &tok)
				t.Logf("tombstone %d @ %d", id, tok)
			}
			rows.Close()
			fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
			for _, k := range []int{1, 2} {
				_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO ledger (id, u, balance, version) VALUES (?, NULL, 666, 1)", k)
				if !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("RESURRECTION: key %d displaced/re-keyed by token 50 re-inserted under token 30: %v", k, err)
				}
			}
		})
	}
}

func TestClientFoundRowsNoEffect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin, dsn := triggerNamesSetup(t, "ledger", tombRenameLedger)
	for _, p := range []string{"&clientFoundRows=true", ""} {
		fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger"+p)
		for i := 0; i < 2; i++ {
			tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
			if err != nil {
				t.Fatal(err)
			}
			var id, b int64
			err = tx.QueryRowContext(fencedsql.WithToken(ctx, 10), "SELECT id, balance FROM ledger WHERE id = 1 FOR UPDATE").Scan(&id, &b)
			t.Logf("%q claim #%d: %v", p, i, err)
			if err != nil {
				t.Errorf("claim under the row's own token %q: %v", p, err)
			}
			res, err := tx.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE ledger SET balance = balance WHERE id = 1")
			if err == nil {
				n, _ := res.RowsAffected()
				t.Logf("%q no-op update affected %d", p, n)
			} else {
				t.Errorf("%q no-op update: %v", p, err)
			}
			tx.Rollback()
		}
		_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "DELETE FROM ledger WHERE id = 2")
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("%q stale delete: %v", p, err)
		}
	}
	_ = admin
}
