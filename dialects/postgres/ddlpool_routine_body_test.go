package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/stdlib"
)

// Routine/trigger DDL whose body ends in "…; END" through a WithDDL pool, on unguarded
// tables, passes (it was refused as "transaction control as SQL text (END)", red-team
// rt50d F2), as CREATE INDEX, ADD COLUMN or a one-statement body do, and the fenced
// writes go on.
func TestDDLPoolRoutineBodyPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, relAccDDL, `INSERT INTO acc VALUES (1, 1, 10, 1)`, `CREATE TABLE other (id int PRIMARY KEY, n int)`, `CREATE TABLE other_log (id int)`)
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc", TokenColumn: "fence_token", VersionColumn: "version"})
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("acc"), fencedsql.WithDDL(true))
	defer db.Close()
	for _, q := range []string{
		`CREATE FUNCTION add_one(i int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT i + 1; END`,
		`CREATE PROCEDURE log_one(i int) LANGUAGE sql BEGIN ATOMIC INSERT INTO other_log VALUES (i); END`,
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
