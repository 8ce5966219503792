package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestPartitionDDLRefused (MariaDB, red-team rt34a F2): the planner refuses TRUNCATE
// TABLE of a guarded table whatever WithDDL says (it removes rows without the DELETE
// trigger, so without tombstones), and the same removal spelled as partition DDL is
// refused the same way: through a pool with fenced_allow=ddl and no token,
//
//   - ALTER TABLE accounts TRUNCATE PARTITION ALL emptied the table without a
//     tombstone, and a stale holder (30) then re-inserted key 1, written under 40;
//   - ALTER TABLE accounts EXCHANGE PARTITION p0 WITH TABLE swap moved rows in without
//     the INSERT trigger: key 2, deleted under 40, came back at token 30.
//
// Each is now ErrUnsupported with nothing sent, and the stale writes after it are
// refused by the tombstones.
func TestPartitionDDLRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		ddl   []string
		stale string // the stale holder's plain write afterwards ("" for none)
		check string // must be 0
	}{
		{name: "TRUNCATE PARTITION", ddl: []string{"ALTER TABLE accounts TRUNCATE PARTITION ALL"},
			stale: "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 666, 30, 1)",
			check: "SELECT COUNT(*) FROM accounts WHERE id = 1 AND fence_token = 30"},
		{name: "EXCHANGE PARTITION", ddl: []string{
			"CREATE TABLE swap LIKE accounts",
			"ALTER TABLE swap REMOVE PARTITIONING",
			"INSERT INTO swap (id, balance, fence_token, version) VALUES (2, 666, 30, 1)",
			"ALTER TABLE accounts EXCHANGE PARTITION p0 WITH TABLE swap"},
			check: "SELECT COUNT(*) FROM accounts WHERE id = 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn, admin := tombstoneClockSetup(t, ctx)
			testdb.Exec(t, admin, "ALTER TABLE accounts PARTITION BY HASH (id) PARTITIONS 2")
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts")+"&fenced_allow=ddl")
			for _, q := range []string{"UPDATE accounts SET balance = 1 WHERE id IN (1, 2)", "DELETE FROM accounts WHERE id = 2"} {
				if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), q); err != nil {
					t.Fatalf("%s under 40: %v", q, err)
				}
			}
			// Controls: TRUNCATE is refused with WithDDL; a stale re-insert of key 2 is fenced.
			if _, err := fenced.ExecContext(ctx, "TRUNCATE TABLE accounts"); err == nil {
				t.Fatal("control: TRUNCATE TABLE accounts passed")
			}
			if _, err := admin.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 666, 30, 1)"); err == nil {
				t.Fatal("control: stale re-insert of key 2 accepted")
			}
			for i, q := range c.ddl {
				_, err := fenced.ExecContext(ctx, q)
				if last := i == len(c.ddl)-1; last && !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Errorf("%s through the pool (fenced_allow=ddl): %v; want ErrUnsupported", q, err)
				} else if !last && err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if c.stale != "" {
				if _, err := admin.ExecContext(ctx, c.stale); err != nil {
					t.Logf("%s: %v", c.stale, err)
				}
			}
			var n int
			if err := admin.QueryRowContext(ctx, c.check).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s through the fenced pool (fenced_allow=ddl) let a stale row (token 30) stand where the newer holder (40) wrote or deleted it: %s = %d, want 0 (refused like TRUNCATE)", c.name, c.check, n)
			}
		})
	}
}
