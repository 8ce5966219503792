package sqllock_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// DropDDL removes everything CreateTable made: nothing named after the table is left.
func TestDropDDLRemovesEverything(t *testing.T) {
	cases := []struct {
		name, driver string
		d            sqllock.Dialect
		dsn          func(testing.TB) string
		left         string
	}{
		{"postgres", "pgx", sqllock.Postgres, testdb.Postgres,
			`SELECT (SELECT COUNT(*) FROM pg_class WHERE relname LIKE 'drop_me%') + (SELECT COUNT(*) FROM pg_proc WHERE proname LIKE 'drop_me%')`},
		{"mariadb", "mysql", sqllock.MySQL, testdb.MySQL,
			`SELECT (SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()) + (SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = DATABASE())`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := sql.Open(c.driver, c.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			if err := sqllock.CreateTable(ctx, db, c.d, "drop_me"); err != nil {
				t.Fatal(err)
			}
			stmts, err := sqllock.DropDDL(c.d, "drop_me")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range stmts {
				if _, err := db.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			var n int
			if err := db.QueryRowContext(ctx, c.left).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d objects left after DropDDL (err %v)", n, err)
			}
		})
	}
}
