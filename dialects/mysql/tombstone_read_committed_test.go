package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneGuardUnderReadCommittedBlocksNoOtherKey (red-team rt62b F1): the
// tombstone guard's check of an inserted key reads the tombstone table with a locking
// read, so that it sees the newest committed tombstone. Under REPEATABLE READ (InnoDB's
// default) that read of an absent key takes a gap lock, and another holder's tombstone
// insert into the gap (its DELETE, key change, or claim of an absent key) waits for the
// first holder's commit, or deadlocks with it (docs/design.md, Known open findings).
// Under READ COMMITTED, the level the documentation gives fenced writers on
// MySQL/MariaDB, InnoDB takes no gap locks: while holder A's transaction that inserted a
// key stays open, holder B's writes of its own keys go through at once, and two holders'
// INSERT then DELETE of their own new keys both commit.
func TestTombstoneGuardUnderReadCommittedBlocksNoOtherKey(t *testing.T) {
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id BIGINT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	fencetest.Guard(t, context.Background(), admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc&innodb_lock_wait_timeout=2&tx_isolation=%27READ-COMMITTED%27")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ca, cb := fencedsql.WithToken(ctx, 10), fencedsql.WithToken(ctx, 11)

	cases := []struct{ name, setup, a, b string }{
		{"DELETE of another key", "INSERT INTO acc (id, fence_token, version) VALUES (#B, 5, 1)", "INSERT INTO acc (id) VALUES (#A)", "DELETE FROM acc WHERE id = #B"},
		{"DELETE of a far key", "INSERT INTO acc (id, fence_token, version) VALUES (#F, 5, 1)", "INSERT INTO acc (id) VALUES (#A)", "DELETE FROM acc WHERE id = #F"},
		{"key change", "INSERT INTO acc (id, fence_token, version) VALUES (#B, 5, 1)", "INSERT INTO acc (id) VALUES (#A)", "UPDATE acc SET id = #C WHERE id = #B"},
		{"INSERT then DELETE of its own key", "", "INSERT INTO acc (id) VALUES (#A)", "INSERT INTO acc (id) VALUES (#B); DELETE FROM acc WHERE id = #B"},
		{"upsert changing the key", "INSERT INTO acc (id, fence_token, version) VALUES (#B, 5, 1)", "INSERT INTO acc (id) VALUES (#A)", "INSERT INTO acc (id) VALUES (#B) ON DUPLICATE KEY UPDATE id = #C"},
		{"INSERT after a paused DELETE", "INSERT INTO acc (id, fence_token, version) VALUES (#C, 5, 1)", "DELETE FROM acc WHERE id = #C", "INSERT INTO acc (id) VALUES (#B)"},
		{"claim of an absent key", "", "INSERT INTO acc (id) VALUES (#A)", "CLAIM SELECT id FROM acc WHERE id = #B FOR UPDATE"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := 1000 * (i + 1)
			keys := strings.NewReplacer("#A", fmt.Sprint(base+5), "#B", fmt.Sprint(base+6), "#C", fmt.Sprint(base+7), "#F", fmt.Sprint(base+900))
			if c.setup != "" {
				testdb.Exec(t, admin, keys.Replace(c.setup))
			}
			txA, err := db.BeginTx(ca, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer txA.Rollback() //nolint:errcheck
			if _, err := txA.ExecContext(ca, keys.Replace(c.a)); err != nil {
				t.Fatalf("holder A: %v", err)
			}
			// A is paused here, its transaction open; B writes its own keys.
			if q, ok := strings.CutPrefix(keys.Replace(c.b), "CLAIM "); ok {
				err = claimAndCommit(cb, db, q)
			} else {
				for _, q := range strings.Split(keys.Replace(c.b), "; ") {
					if _, err = db.ExecContext(cb, q); err != nil {
						break
					}
				}
			}
			if err != nil {
				t.Errorf("holder B's write of its own key while holder A's transaction is open: %v; want no wait (READ COMMITTED takes no gap locks)", err)
			}
		})
	}

	t.Run("INSERT then DELETE by two holders at once", func(t *testing.T) {
		keys := []int64{50005, 50006}
		txs := make([]*sql.Tx, 2)
		ctxs := []context.Context{ca, cb}
		for i := range txs {
			tx, err := db.BeginTx(ctxs[i], nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.ExecContext(ctxs[i], "INSERT INTO acc (id) VALUES (?)", keys[i]); err != nil {
				t.Fatal(err)
			}
			txs[i] = tx
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, tx := range txs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, errs[i] = tx.ExecContext(ctxs[i], "DELETE FROM acc WHERE id = ?", keys[i]); errs[i] == nil {
					errs[i] = tx.Commit()
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("holder of key %d: %v; want both committed (no row in common, no gap lock)", keys[i], err)
			}
		}
	})
}

// claimAndCommit runs the locking read q in a transaction of its own, reads its rows
// and commits.
func claimAndCommit(ctx context.Context, db *sql.DB, q string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	if err := rows.Close(); err != nil {
		return err
	}
	return tx.Commit()
}
