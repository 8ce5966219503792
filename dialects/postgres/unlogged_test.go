package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// An UNLOGGED guarded table, or an UNLOGGED partition of a logged one, is emptied by
// crash recovery and has no rows on any physical standby: the tokens the fence compares
// with are forgotten, and a stale holder writes again (a red-team pass). The lazy check
// refuses the first guarded write (ErrSchema, nothing written); schema.Check reports it
// with ALTER TABLE … SET LOGGED, after which the table passes and is written.
func TestUnloggedGuardedTableRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	pgExec(t, admin,
		"CREATE UNLOGGED TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE orders (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) PARTITION BY RANGE (id)",
		"CREATE TABLE orders_p0 PARTITION OF orders FOR VALUES FROM (0) TO (1000)",
		"CREATE UNLOGGED TABLE orders_p1 PARTITION OF orders FOR VALUES FROM (1000) TO (2000)",
	)
	for _, c := range []struct{ table, unlogged string }{{"accounts", "public.accounts"}, {"orders", "public.orders_p1"}} {
		spec := schema.GuardSpec{Table: c.table}
		reports, err := schema.Check(ctx, admin, postgres.Dialect, spec)
		if err != nil {
			t.Fatal(err)
		}
		problems := strings.Join(reports[0].Problems, "\n")
		fix := strings.Join(reports[0].Fix, "\n")
		if !strings.Contains(problems, c.unlogged+" is UNLOGGED") || !strings.Contains(fix, "SET LOGGED") {
			t.Errorf("%s: schema.Check reports %q (a SET LOGGED fix: %v); want %s reported UNLOGGED with SET LOGGED", c.table, problems, strings.Contains(fix, "SET LOGGED"), c.unlogged)
		}
		// The guards installed (everything but the lint's fix): the lazy check refuses.
		for _, q := range reports[0].Fix {
			if !strings.Contains(q, "SET LOGGED") {
				pgExec(t, admin, q)
			}
		}
		db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables="+c.table)
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO "+c.table+" (id, balance) VALUES (1500, 1)")
		db.Close()
		if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "UNLOGGED") {
			t.Errorf("%s: fenced write to an UNLOGGED table: %v, want ErrSchema naming UNLOGGED", c.table, err)
		}
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM " + c.table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows written (%v)", c.table, n, err)
		}
		// The fix, then the table passes and is written.
		for _, q := range reports[0].Fix {
			if strings.Contains(q, "SET LOGGED") {
				pgExec(t, admin, q)
			}
		}
		if reports, err = schema.Check(ctx, admin, postgres.Dialect, spec); err != nil || len(reports[0].Problems) != 0 {
			t.Errorf("%s: after SET LOGGED: %q, %v", c.table, reports[0].Problems, err)
		}
		db, err = sql.Open("fenced-pgx", dsn+"&fenced_tables="+c.table)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO "+c.table+" (id, balance) VALUES (1500, 1)"); err != nil {
			t.Errorf("%s: fenced write after SET LOGGED: %v", c.table, err)
		}
		db.Close()
	}
}
