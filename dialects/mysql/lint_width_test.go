package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A fencing column too narrow for its values: an INT token column takes no redislock
// token (microseconds since the epoch), a TINYINT version overflows after 127 writes,
// and either fails with the server's out-of-range error instead of ErrSchema. The lazy
// check refuses the table (ErrSchema, nothing written), schema.Check reports it with
// its fix, and after the fix a redislock-sized token writes.
func TestLintNarrowFencingColumns(t *testing.T) {
	for name, cols := range map[string]string{
		"int token":        "fence_token INT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0",
		"mediumint token":  "fence_token MEDIUMINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0",
		"tinyint version":  "fence_token BIGINT NOT NULL DEFAULT 0, version TINYINT NOT NULL DEFAULT 0",
		"smallint version": "fence_token BIGINT NOT NULL DEFAULT 0, version SMALLINT UNSIGNED NOT NULL DEFAULT 0",
	} {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.MySQL(t)
			ctx := context.Background()
			raw, err := sql.Open("mysql", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.ExecContext(ctx, "CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "+cols+") ENGINE=InnoDB"); err != nil {
				t.Fatal(err)
			}
			open := func() *sql.DB {
				db, err := sql.Open("fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			if _, err := open().ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (id) VALUES (1)"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("INSERT into the table: err = %v, want ErrSchema", err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM acc").Scan(&n); err != nil || n != 0 {
				t.Fatalf("rows = %d (%v): the refused INSERT wrote", n, err)
			}
			reps, err := schema.Check(ctx, raw, mysqldialect.Dialect, schema.GuardSpec{Table: "acc"})
			if err != nil || len(reps[0].Problems) == 0 || len(reps[0].Fix) == 0 {
				t.Fatalf("schema.Check: %+v, %v; want the column's problem and fix", reps, err)
			}
			for _, q := range reps[0].Fix {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("fix %q: %v", q, err)
				}
			}
			if _, err := open().ExecContext(fencedsql.WithToken(ctx, 1_780_000_000_000_000), "INSERT INTO acc (id) VALUES (1)"); err != nil {
				t.Fatalf("INSERT under a redislock-sized token after the fix: %v", err)
			}
		})
	}
}
