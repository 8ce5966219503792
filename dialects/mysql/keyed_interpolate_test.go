package mysql_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestKeyedStatementsInterpolated: with interpolateParams=true go-sql-driver/mysql
// sends statements as text with their arguments as literals. The keyed statements'
// record then folded (`(@v := 5) IS NULL` is constant to MariaDB, and never
// assigned) and, on a connection's first keyed statement, read the never-set
// variables as constant NULLs: every keyed claim of more than one row and every keyed
// DELETE failed its count check. Each runs here first on a new connection, then
// again, over several rows, in both protocols.
func TestKeyedStatementsInterpolated(t *testing.T) {
	for _, interp := range []string{"", "&interpolateParams=true"} {
		t.Run("interpolate="+fmt.Sprint(interp != ""), func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQL(t)
			testdb.Open(t, "mysql", dsn,
				"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO accounts (id, balance) VALUES (1, 1), (2, 1), (3, 1), (4, 2), (5, 2), (6, 2), (7, 3), (8, 3)",
				"INSERT INTO accounts (id, balance) SELECT 100 + seq, 9 FROM seq_1_to_700")
			fenced := testdb.Open(t, "fenced-mysql", dsn+interp+"&fenced_tables=accounts")
			fenced.SetMaxOpenConns(1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ctx = fencedsql.WithToken(ctx, 10)
			for i, bal := range []int{1, 2} {
				res, err := fenced.ExecContext(ctx, "DELETE FROM accounts WHERE balance = ? ORDER BY id LIMIT 3", bal)
				if err != nil {
					t.Fatalf("DELETE %d: %v", i, err)
				}
				if n, _ := res.RowsAffected(); n != 3 {
					t.Fatalf("DELETE %d deleted %d rows, want 3", i, n)
				}
			}
			// Past the record's search: deleted by lists of keys bound as arguments.
			if res, err := fenced.ExecContext(ctx, "DELETE FROM accounts WHERE balance = ?", 9); err != nil {
				t.Fatalf("DELETE of 700 rows: %v", err)
			} else if n, _ := res.RowsAffected(); n != 700 {
				t.Fatalf("DELETE of 700 rows deleted %d", n)
			}
			tx, err := fenced.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			rows, err := tx.QueryContext(ctx, "SELECT id FROM accounts WHERE balance = ? ORDER BY id LIMIT 5 FOR UPDATE", 3)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := scanIDs(rows); err != nil || !reflect.DeepEqual(got, []int64{7, 8}) {
				t.Fatalf("claim: %v, %v; want [7 8]", got, err)
			}
		})
	}
}
