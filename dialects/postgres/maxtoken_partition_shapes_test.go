package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMaxTokenGuardedPartitionShapes (kept from red-team rt61a, held): schema.MaxToken
// without tables (the failover hook's -max-token) over partitions guarded on their own
// in shapes the earlier test did not build: a partition in another schema (a renamed
// token column was tried too: MaxToken refuses a trigger-only table on other columns, a
// known limit, rt42c F2), a sub-partitioned partition guarded on its own whose leaf is
// in a third schema, and a partition whose only trace of its highest token is a
// tombstone (its row deleted by a fenced DELETE). Oracle: MaxToken >= every token a
// write was accepted under.
func TestMaxTokenGuardedPartitionShapes(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE SCHEMA s2", "CREATE SCHEMA s3",
		"CREATE TABLE ev (region INT NOT NULL, id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (region, id)) PARTITION BY LIST (region)",
		"CREATE TABLE s2.ev_a PARTITION OF ev FOR VALUES IN (1)",
		"CREATE TABLE s2.ev_b PARTITION OF ev FOR VALUES IN (2) PARTITION BY RANGE (id)",
		"CREATE TABLE s3.ev_b_low PARTITION OF s2.ev_b FOR VALUES FROM (0) TO (1000)",
		"CREATE TABLE ev_c PARTITION OF ev FOR VALUES IN (3)",
	)
	specs := []schema.GuardSpec{{Table: "s2.ev_a"}, {Table: "s2.ev_b"}, {Table: "ev_c"}}
	fencetest.Guard(t, ctx, raw, postgres.Dialect, specs...)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("s2.ev_a"), fencedsql.Guard("s2.ev_b"), fencedsql.Guard("ev_c"))
	defer db.Close()
	steps := []struct {
		tok  uint64
		stmt string
	}{
		{300, "INSERT INTO s2.ev_a (region, id, balance) VALUES (1, 1, 10)"},
		{400, "INSERT INTO s2.ev_b (region, id, balance) VALUES (2, 1, 10)"},
		{100, "INSERT INTO ev_c (region, id, balance) VALUES (3, 1, 10)"},
		{900, "DELETE FROM ev_c WHERE region = 3 AND id = 1"},
	}
	for _, w := range steps {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, w.tok), w.stmt); err != nil {
			t.Fatalf("%s under %d: %v", w.stmt, w.tok, err)
		}
		m, err := schema.MaxToken(ctx, raw, postgres.Dialect)
		if err != nil || m < w.tok {
			t.Errorf("after %s under %d: schema.MaxToken (no tables, as -max-token) = %d, %v; want >= %d", w.stmt, w.tok, m, err, w.tok)
		}
	}
}
