package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimsUnderContentionExactAndOrdered (red-team rt46e, held): fencetest.ClaimContention
// on MariaDB, by id and by condition, under the default isolation and READ COMMITTED.
func TestClaimsUnderContentionExactAndOrdered(t *testing.T) {
	for _, c := range []struct {
		iso  sql.IsolationLevel
		pred string
	}{
		{sql.LevelDefault, ""},
		{sql.LevelReadCommitted, "balance < 40 ORDER BY balance, id LIMIT 2"},
		{sql.LevelDefault, "balance < 40"},
	} {
		t.Run(c.iso.String()+"/"+c.pred, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			dsn := testdb.MySQL(t)
			admin := testdb.Open(t, "mysql", dsn,
				"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO accounts (id) VALUES (1),(2),(3),(4),(5),(6)",
				"CREATE TABLE claim_contention_log (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT, tok BIGINT)")
			fencetest.Guard(t, ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
			// A claim that waits out a lock wait fails typed (1205): a short wait keeps
			// the test fast.
			db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn+"&fenced_tables=accounts", "innodb_lock_wait_timeout=2"))
			db.SetMaxOpenConns(8)
			fencetest.ClaimContention(t, ctx, db, admin, fencetest.Contention{
				Columns: "id, fence_token", Pred: c.pred, Iso: c.iso, N: 8,
				Placeholder: func(int) string { return "?" },
				Expected: func(t *testing.T, tok uint64, err error) bool {
					var me *gomysql.MySQLError
					if errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205) {
						return true
					}
					var se *fencedsql.SessionError
					if errors.As(err, &se) && se.Setting == "timestamp" {
						// Fail-closed, seen on a heavily loaded shared server: the
						// session query stalled past clockTolerance (docs/design.md,
						// Known open findings). Nothing was written; not what this
						// test checks.
						t.Logf("token %d: %v (known open finding: session clock check under load)", tok, err)
						return true
					}
					return false
				},
			})
		})
	}
}
