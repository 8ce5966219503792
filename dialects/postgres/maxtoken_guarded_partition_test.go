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

// TestMaxTokenReadsPartitionGuardedOnItsOwn: a partition carrying guard triggers of
// its own (created on it, not cloned from its root's) while its root carries none —
// a leaf partition, and a sub-partitioned partition whose leaves carry its clones —
// installed from Check's Fix (no registry row), is a table the database records as
// guarded: schema.Recorded lists it, schema.Unlisted reports it when a table list
// leaves it out, and schema.MaxToken without tables (fencedsql-schema -max-token, the
// failover/restore hook's second step) reads its tokens. The clones on a guarded
// root's partitions stay the root's (listed once, by the root). Red-team rt60b F2:
// GuardedTablesQuery left out every partition, and MaxToken answered 10 while the
// partition held 500.
func TestMaxTokenReadsPartitionGuardedOnItsOwn(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const cols = "id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE other ("+cols+", PRIMARY KEY (id))",
		"CREATE TABLE events (region INT NOT NULL, "+cols+", PRIMARY KEY (region, id)) PARTITION BY LIST (region)",
		"CREATE TABLE events_eu PARTITION OF events FOR VALUES IN (1)",
		"CREATE TABLE events_us PARTITION OF events FOR VALUES IN (2) PARTITION BY RANGE (id)",
		"CREATE TABLE events_us_low PARTITION OF events_us FOR VALUES FROM (0) TO (1000)",
		"CREATE TABLE rooted (region INT NOT NULL, "+cols+", PRIMARY KEY (region, id)) PARTITION BY LIST (region)",
		"CREATE TABLE rooted_eu PARTITION OF rooted FOR VALUES IN (1)",
	)
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "other"}, schema.GuardSpec{Table: "events_eu"},
		schema.GuardSpec{Table: "events_us"}, schema.GuardSpec{Table: "rooted"})
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("other"), fencedsql.Guard("events_eu"), fencedsql.Guard("events_us"), fencedsql.Guard("rooted"))
	defer db.Close()
	for _, w := range []struct {
		tok  uint64
		stmt string
	}{
		{10, "INSERT INTO other (id, balance) VALUES (1, 10)"},
		{20, "INSERT INTO rooted (region, id, balance) VALUES (1, 1, 10)"},
		{500, "INSERT INTO events_eu (region, id, balance) VALUES (1, 1, 10)"},
		{700, "INSERT INTO events_us (region, id, balance) VALUES (2, 1, 10)"},
	} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, w.tok), w.stmt); err != nil {
			t.Fatalf("%s under %d: %v", w.stmt, w.tok, err)
		}
	}
	recs, err := schema.Recorded(ctx, raw, postgres.Dialect)
	if err != nil {
		t.Fatalf("schema.Recorded: %v", err)
	}
	listed := map[string]bool{}
	for _, r := range recs {
		listed[r.Table] = true
	}
	for _, want := range []string{"public.other", "public.events_eu", "public.events_us", "public.rooted"} {
		if !listed[want] {
			t.Errorf("schema.Recorded = %+v: %s (guard triggers of its own) is not listed", recs, want)
		}
	}
	for _, clone := range []string{"public.events_us_low", "public.rooted_eu", "public.events"} {
		if listed[clone] {
			t.Errorf("schema.Recorded = %+v lists %s, which carries no guard trigger of its own (clones, or none)", recs, clone)
		}
	}
	unlisted, err := schema.Unlisted(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "other"}, schema.GuardSpec{Table: "rooted"})
	if err != nil {
		t.Fatalf("schema.Unlisted: %v", err)
	}
	got := map[string]bool{}
	for _, u := range unlisted {
		got[u.Table] = true
	}
	if len(unlisted) != 2 || !got["public.events_eu"] || !got["public.events_us"] {
		t.Errorf("schema.Unlisted(other, rooted) = %+v; want the guarded partitions events_eu and events_us", unlisted)
	}
	if m, err := schema.MaxToken(ctx, raw, postgres.Dialect); err != nil || m < 700 {
		t.Errorf("schema.MaxToken (no tables, as -max-token) = %d, %v; the partitions guarded on their own hold tokens 500 and 700", m, err)
	}
}

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
