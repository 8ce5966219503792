package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// BenchmarkLazyCheck measures the fenced pool's first write to a guarded table (the
// lazy schema check, once per table and pool) in a database with 1 and with 150
// guarded, tombstoned tables: each iteration opens a new pool and writes once. The
// baseline (raw) does the same through the plain driver, writing the token itself: a
// new connection parses the whole schema (every guard trigger) either way.
//
//	go test -run XXX -bench LazyCheck -benchtime 20x ./dialects/sqlite/
func BenchmarkLazyCheck(b *testing.B) {
	for _, n := range []int{1, 150} {
		b.Run(fmt.Sprint(n, "tables"), func(b *testing.B) {
			ctx := context.Background()
			dsn := testdb.SQLite(b)
			raw := testdb.Open(b, "sqlite", dsn)
			var specs []schema.GuardSpec
			for i := 0; i < n; i++ {
				testdb.Exec(b, raw, fmt.Sprintf("CREATE TABLE t%d (id INTEGER PRIMARY KEY, v INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)", i),
					fmt.Sprintf("INSERT INTO t%d (id, v) VALUES (1, 0)", i))
				specs = append(specs, schema.GuardSpec{Table: fmt.Sprint("t", i)})
			}
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, specs...)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range reps {
				testdb.Exec(b, raw, r.Fix...)
			}
			b.Run("fenced", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					db := testdb.Open(b, "fenced-sqlite", dsn+"&fenced_tables=t0")
					if _, err := db.ExecContext(fencedsql.WithToken(ctx, uint64(i+1)), "UPDATE t0 SET v = v + 1 WHERE id = 1"); err != nil {
						b.Fatal(err)
					}
					db.Close()
				}
			})
			b.Run("raw", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					db := testdb.Open(b, "sqlite", dsn)
					if _, err := db.ExecContext(ctx, "UPDATE t0 SET v = v + 1, fence_token = 1000000, version = version + 1 WHERE id = 1"); err != nil {
						b.Fatal(err)
					}
					db.Close()
				}
			})
		})
	}
}
