package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// tombRenameInstallAll runs schema.Check over specs, applies every Fix, and checks again:
// every report must then be OK.
func tombRenameInstallAll(t *testing.T, ctx context.Context, dsn string, specs []schema.GuardSpec, setup ...string) {
	t.Helper()
	raw := rawWith(t, dsn, setup...)
	for round := 0; round < 3; round++ {
		reps, err := schema.Check(ctx, raw, postgres.Dialect, specs...)
		if err != nil {
			t.Fatal(err)
		}
		var fix []string
		for _, r := range reps {
			fix = append(fix, r.Fix...)
		}
		if len(fix) == 0 {
			break
		}
		testdb.Exec(t, raw, fix...)
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !r.OK() {
			t.Errorf("after the library's own Fix: %s not OK: %q", r.Table, r.Problems)
		}
	}
}

// TestTombstoneRenamedTableFixKeepsTombstones (red-team rt30a F1, was fail-open). A
// guarded table with the tombstone guard, installed by schema.Check's Fix, is renamed by
// a migration (ALTER TABLE ledger RENAME TO ledger2: its triggers move with it, still
// calling fencedsql_tombstone_ledger, which records into fencedsql_tomb_ledger).
// schema.Check on ledger2 reports the guards missing, and its Fix installs them under
// the new name over fencedsql_tomb_ledger2: that Fix must carry the tombstones recorded
// before the rename over (token 50 for key 1), so that a stale holder (token 20) cannot
// re-insert the key through the fenced pool afterwards.
func TestTombstoneRenamedTableFixKeepsTombstones(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	tombRenameInstallAll(t, ctx, dsn, []schema.GuardSpec{{Table: "ledger", TokenColumn: "fence_token", VersionColumn: "version"}},
		"CREATE TABLE ledger (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=ledger")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO ledger (id) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM ledger WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw := rawWith(t, dsn, "ALTER TABLE ledger RENAME TO ledger2")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "ledger2", TokenColumn: "fence_token", VersionColumn: "version"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the rename: OK=%v problems %q", reps[0].OK(), reps[0].Problems)
	testdb.Exec(t, raw, reps[0].Fix...)
	var tok int64
	if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger2 WHERE id = 1").Scan(&tok); err != nil || tok != 50 {
		t.Errorf("tombstone of key 1 in fencedsql_tomb_ledger2 after the Fix: token %d, %v; want 50", tok, err)
	}
	if reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "ledger2", TokenColumn: "fence_token", VersionColumn: "version"}); err != nil || !reps[0].OK() {
		t.Errorf("after the Fix: %v %q", err, reps[0].Problems)
	}
	db2 := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=ledger2")
	_, err = db2.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO ledger2 (id) VALUES (1)")
	if err == nil {
		t.Errorf("stale re-insert (token 20) of key 1 deleted under token 50 succeeded after the rename and the library's Fix: the tombstones were left in fencedsql_tomb_ledger")
	}
}
