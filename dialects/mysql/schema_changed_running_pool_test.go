package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	gomysql "github.com/go-sql-driver/mysql"
)

// MariaDB twin of TestRunningPoolFencingColumnRenamedPostgres.
func TestRunningPoolFencingColumnRenamedMySQL(t *testing.T) {
	for _, col := range []string{"fence_token", "version"} {
		t.Run(col, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn := testdb.MySQL(t)
			raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE acc (id int PRIMARY KEY, v int NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`, `INSERT INTO acc VALUES (1, 1, 10, 1)`)
			fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "acc", TokenColumn: "fence_token", VersionColumn: "version"})
			db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, dsn),
				fencedsql.WithDialect(mysql.Dialect), fencedsql.Guard("acc"))
			defer db.Close()
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET v = 2 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, `ALTER TABLE acc RENAME COLUMN `+col+` TO old_col`)
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE acc SET v = 3 WHERE id = 1")
			t.Logf("pool write after the rename: %v (%T)", err, err)
			var se *fencedsql.SchemaError
			if err == nil || !(errors.Is(err, fencedsql.ErrSchema) || errors.As(err, &se)) {
				t.Errorf("fenced write after %s was renamed on a plain connection while the pool ran: %v; want ErrSchema (*SchemaError)", col, err)
			}
			// the verdict was dropped: the next write is the lazy check's own refusal
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE acc SET v = 3 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("the write after: %v; want ErrSchema", err)
			}
		})
	}
}
