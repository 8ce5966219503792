package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSchemaRenameKeepsFence (red-team rt57b, held): ALTER SCHEMA … RENAME moves a
// guarded table with every guard object, whose texts still name the old schema. The
// pool on the new name refuses typed or fences, Check reports the guard, its Fix
// converges, and afterwards a stale update and a stale re-insert of a key deleted
// before the rename are refused.
func TestSchemaRenameKeepsFence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE SCHEMA sren_s1",
		"CREATE TABLE sren_s1.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO sren_s1.accounts (id, balance, fence_token, version) VALUES (1, 100, 10, 1), (2, 100, 10, 1)")
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: "sren_s1.accounts"}); err != nil || !longAllOK(reps) {
		t.Fatalf("apply: %v %q", err, fencetest.ReportProblems(reps))
	}
	old := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=sren_s1.accounts")
	for _, q := range []string{"UPDATE sren_s1.accounts SET balance = 1 WHERE id IN (1, 2)", "DELETE FROM sren_s1.accounts WHERE id = 2"} {
		if _, err := old.ExecContext(fencedsql.WithToken(ctx, 40), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	old.Close()
	testdb.Exec(t, raw, "ALTER SCHEMA sren_s1 RENAME TO sren_s2")
	spec := schema.GuardSpec{Table: "sren_s2.accounts"}
	fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=sren_s2.accounts")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO sren_s2.accounts (id, balance) VALUES (2, 666)"); err == nil {
		t.Errorf("stale re-insert of key 2 through the pool after the rename: accepted")
	} else if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Logf("stale re-insert before the Fix: %v", err)
	}
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
		t.Fatalf("apply after the rename: %v %q", err, fencetest.ReportProblems(reps))
	}
	fenced2 := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=sren_s2.accounts")
	if _, err := fenced2.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO sren_s2.accounts (id, balance) VALUES (2, 666)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale re-insert of key 2 after the Fix: %v; want ErrFenced", err)
	}
	if _, err := fenced2.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE sren_s2.accounts SET balance = 666 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale update after the Fix: %v; want ErrFenced", err)
	}
	raw.ExecContext(ctx, "INSERT INTO sren_s2.accounts (id, balance, fence_token, version) VALUES (2, 666, 30, 1)")
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM sren_s2.accounts WHERE balance = 666").Scan(&n); err != nil || n != 0 {
		t.Errorf("a stale write landed after the rename and Fix: %d rows (%v)", n, err)
	}
}
