package postgres_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Over-refusal. tombstoneKey names the tombstone table with tombTable(fold(t.Table)),
// whose schema is "public" when the table is unqualified — but the lazy check passes
// the table as the DSN names it, and to_regclass resolves it through the session's
// search_path. A pool with search_path=app and fenced_tables=acc over app.acc (text
// key) is compared with public.fencedsql_tomb_acc, the tombstone table of another
// table public.acc (bigint key): a false "tombstone key" door, and its Fix would ALTER
// public's tombstone table to text. (With no public.acc, app.acc's own drift goes
// unseen by the lazy check.) Right: resolve the table's schema first (as to_regclass
// does) and compare with that schema's tombstone table; the write is accepted.
func TestRTrt21aPGTombKeyWrongSchemaLazyCheck(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE SCHEMA app",
		"CREATE TABLE app.acc (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		rt20gAcc)
	for _, tbl := range []string{"app.acc", "public.acc"} {
		reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: tbl})
		if err != nil {
			t.Fatal(err)
		}
		rawWith(t, dsn, reps[0].Fix...)
		if reps, _ = schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: tbl}); !reps[0].OK() {
			t.Fatalf("setup %s: %q", tbl, reps[0].Problems)
		}
	}
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "search_path=app")+"&fenced_tables=acc")
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "INSERT INTO acc (id, fence_token, version) VALUES ('k', 10, 1)")
	if err != nil {
		t.Fatalf("[over-refusal] pool with search_path=app over app.acc (guarded, schema.Check OK) refuses: %.400s; want the write accepted", err)
	}
}
