package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	gomysql "github.com/go-sql-driver/mysql"
)

// Routine/trigger DDL whose body ends in "…; END" through a WithDDL pool, on unguarded
// tables, passes (it was refused as "transaction control as SQL text (END)", red-team
// rt50d F2), as CREATE INDEX, ADD COLUMN or a one-statement body do, and the fenced
// writes go on.
func TestDDLPoolRoutineBodyMySQL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE acc (id int PRIMARY KEY, v int NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`, `INSERT INTO acc VALUES (1, 1, 10, 1)`,
		`CREATE TABLE other (id int PRIMARY KEY, n int)`, `CREATE TABLE other_log (id int)`)
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "acc", TokenColumn: "fence_token", VersionColumn: "version"})
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, dsn),
		fencedsql.WithDialect(mysql.Dialect), fencedsql.Guard("acc"), fencedsql.WithDDL(true))
	defer db.Close()
	for _, q := range []string{
		`CREATE TRIGGER other_bi BEFORE INSERT ON other FOR EACH ROW BEGIN SET NEW.n = 1; END`,
		`CREATE PROCEDURE log_one(i int) BEGIN INSERT INTO other_log VALUES (i); END`,
	} {
		_, err := db.ExecContext(ctx, q)
		_, werr := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE acc SET v = v + 1 WHERE id = 1")
		t.Logf("%s: %v; write after: %v", q, err, werr)
		if err != nil {
			t.Errorf("%q through a WithDDL pool: %v", q, err)
		}
		if werr != nil {
			t.Errorf("fenced write after %q: %v", q, werr)
		}
	}
}
