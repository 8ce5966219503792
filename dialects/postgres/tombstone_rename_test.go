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

// TestDollarQuotedTombPurgeReported (fail-open). The guard-writer check
// (otherTriggers case 5, guardWrites → dialect.WritesTableWords) reads a routine's body
// for a statement that writes the tombstone table. A SECURITY DEFINER function that
// PUBLIC may execute, whose body is EXECUTE $q$DELETE FROM fencedsql_tomb_accounts$q$
// — dynamic SQL in a dollar-quoted string, the usual plpgsql spelling — is not seen:
// the name is directly followed by the closing tag, and '$' is an identifier character
// in PostgreSQL, so the scanner reads "fencedsql_tomb_accounts$q" and no name matches
// (the same with EXECUTE $q$TRUNCATE fencedsql_tomb_accounts$q$; with a space before
// the closing tag, or with a plain '…' string, it is seen). schema.Check is OK, the
// lazy check lets the pool write, and a call through the pool erases the tombstones: a
// stale holder (token 90) re-inserts key 1, deleted under token 100.
//
// Right behaviour: the body of a dollar-quoted string is scanned without its
// delimiters (the closing tag ends the identifier): schema.Check reports a guard
// writer (REVOKE EXECUTE), the fenced pool refuses with ErrSchema, and the stale
// re-insert does not land.
func TestDollarQuotedTombPurgeReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	specs := []schema.GuardSpec{{Table: "accounts", TokenColumn: "fence_token", VersionColumn: "version"}}
	tombRenameInstallAll(t, ctx, dsn, specs, guardTableAccounts,
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
	raw := rawWith(t, dsn,
		"CREATE FUNCTION rt30a_purge() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN EXECUTE $q$DELETE FROM fencedsql_tomb_accounts$q$; END $$")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Errorf("schema.Check: OK with a PUBLIC SECURITY DEFINER function that deletes every tombstone (EXECUTE $q$DELETE FROM fencedsql_tomb_accounts$q$); want a guard writer door")
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Logf("fenced DELETE (token 100): %v", err)
		return // refused: the door was seen by the lazy check
	}
	if _, err := db.ExecContext(ctx, "SELECT rt30a_purge()"); err != nil {
		t.Logf("SELECT rt30a_purge() through the pool: %v", err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, 666)")
	if err == nil {
		t.Errorf("stale re-insert (token 90) of key 1, deleted under token 100, landed after the unseen purge routine ran through the pool")
	}
}
