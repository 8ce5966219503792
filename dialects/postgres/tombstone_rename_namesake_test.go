package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneRenameSwappedTablesTombstones (red-team rt33c, fail-open): accounts and
// ledger, both guarded, swap names (accounts→tmp, ledger→accounts, tmp→ledger). Key 1
// of the old accounts (now ledger) was deleted under 70, key 2 of the old ledger (now
// accounts) under 80. schema.Check on accounts reports the tombstone triggers on
// ledger (which still run fencedsql_tombstone_accounts(), writing
// fencedsql_tomb_accounts) as a "guard writer" side door and its Fix DROPs them; so
// when ledger's own Fix runs, its carry-over finds no foreign tombstone trigger and
// ledger's guard starts from fencedsql_tomb_ledger, which holds the other table's
// tombstones: key 1 (deleted at 70) is re-inserted under 65. Right behaviour: the
// guard-writer door's Fix must not drop a moved table's tombstone triggers before
// their tombstones are carried over (install that table's own guard first, as the
// MySQL/SQLite carriers do, or carry over in the Fix), and both stale INSERTs are
// refused with ErrFenced.
func TestTombstoneRenameSwappedTablesTombstones(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw, strings.Replace(guardTableAccounts, "accounts", "ledger", 1),
		"INSERT INTO ledger (id, balance, fence_token, version) VALUES (2, 5, 60, 1)")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	f := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts,ledger")
	if _, err := f.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ExecContext(fencedsql.WithToken(ctx, 80), "DELETE FROM ledger WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	testdb.Exec(t, raw, "ALTER TABLE accounts RENAME TO rt33c_tmp", "ALTER TABLE ledger RENAME TO accounts", "ALTER TABLE rt33c_tmp RENAME TO ledger")
	fixUntilOK(t, ctx, raw, "accounts", "ledger")
	g := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts,ledger")
	if _, err := g.ExecContext(fencedsql.WithToken(ctx, 75), "INSERT INTO accounts (id, balance) VALUES (2, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT of accounts key 2 (deleted at 80 as ledger) under 75: %v; want ErrFenced", err)
	}
	if _, err := g.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO ledger (id, balance) VALUES (1, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT of ledger key 1 (deleted at 70 as accounts) under 65: %v; want ErrFenced", err)
	}
}

// TestTombstoneRenameNamesakeFixDropsRenamedTriggers (red-team rt33c, fail-open): accounts is
// renamed to ledger2, a new accounts is created and guarded BEFORE ledger2's guard is
// re-installed (the order an online schema change or a re-deploy gives). The new
// accounts' schema.Check reports ledger2's tombstone triggers (running
// fencedsql_tombstone_accounts()) as a guard writer and its Fix drops them; ledger2's
// later Fix then has nothing to carry over, and key 1, deleted under 70 before the
// rename, is re-inserted into ledger2 under 65. Right behaviour: ErrFenced (the
// tombstone carried to fencedsql_tomb_ledger2), as on MySQL and SQLite
// (TestTombstoneNamesakeInstallKeepsRenamedTablesTombstones).
func TestTombstoneRenameNamesakeFixDropsRenamedTriggers(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	f := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := f.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	testdb.Exec(t, raw, "ALTER TABLE accounts RENAME TO ledger2", guardTableAccounts)
	fixUntilOK(t, ctx, raw, "accounts", "ledger2")
	g := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=ledger2")
	_, err := g.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO ledger2 (id, balance) VALUES (1, 666)")
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM ledger2 WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT of ledger2 key 1 (deleted at 70 before the rename) under 65: %v (%d rows); want ErrFenced and no row", err, n)
	}
}

// TestTombstoneRenameSetSchemaNamesakeFixDropsMovedTriggers (red-team rt33c, fail-open and
// over-refusal): the SET SCHEMA form of TestTombstoneRenameNamesakeFixDropsRenamedTriggers.
// accounts (key 1 deleted under 70) is moved with ALTER TABLE accounts SET SCHEMA
// moved, a new public.accounts is created, and fencedsql-schema -apply runs over both
// (public.accounts listed first, rounds until both report OK). public.accounts' Fix
// drops moved.accounts' tombstone triggers (a "guard writer": they run
// public.fencedsql_tombstone_accounts()) before moved.accounts' own Fix could carry
// their tombstones over: moved.fencedsql_tomb_accounts never gets key 1, and a stale
// write of key 1 under token 65 is accepted by the database. Besides, the Fixes never
// converge: moved.accounts' guard triggers still run public.fencedsql_guard_accounts()
// (replaced by public.accounts' Fix), reported on both tables as a guard writer
// without a Fix, so the fenced pool refuses moved.accounts for good. Right behaviour:
// the Fixes converge (moved.accounts gets its own guard function), key 1 is carried
// over to moved.fencedsql_tomb_accounts at 70, and the stale write is refused.
func TestTombstoneRenameSetSchemaNamesakeFixDropsMovedTriggers(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE SCHEMA moved")
	f := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := f.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	testdb.Exec(t, raw, "ALTER TABLE accounts SET SCHEMA moved", guardTableAccounts)
	var problems []string
	for round := 0; round < 4; round++ {
		problems = nil
		for _, tbl := range []string{"public.accounts", "moved.accounts"} {
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: tbl})
			if err != nil {
				t.Fatal(err)
			}
			if !reps[0].OK() {
				for _, p := range reps[0].Problems {
					problems = append(problems, tbl+": "+p)
				}
				testdb.Exec(t, raw, reps[0].Fix...)
			}
		}
		if problems == nil {
			break
		}
	}
	if problems != nil {
		t.Errorf("after four rounds of Fixes (over-refusal: they never converge): %q", problems)
	}
	var tomb int64
	if err := raw.QueryRowContext(ctx, "SELECT coalesce(max(fence_token), 0) FROM moved.fencedsql_tomb_accounts WHERE id = 1").Scan(&tomb); err != nil {
		t.Fatal(err)
	}
	_, err := raw.ExecContext(ctx, "INSERT INTO moved.accounts (id, balance, fence_token, version) VALUES (1, 666, 65, 1)")
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM moved.accounts WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if tomb != 70 || err == nil || n != 0 {
		t.Fatalf("moved.fencedsql_tomb_accounts holds key 1 at %d (want 70 carried over); the stale plain INSERT of key 1 under token 65 returned %v (%d rows); want the tombstone refusal and no row", tomb, err, n)
	}
}

// fixUntilOK runs schema.Check's Fix of each table in turn, at most three times, until
// its report is OK (a Fix that installs another table's guard first needs a second
// round), and fails the test when one is not.
func fixUntilOK(t *testing.T, ctx context.Context, raw *sql.DB, tables ...string) {
	t.Helper()
	for _, tbl := range tables {
		var r schema.TableReport
		for i := 0; i < 3; i++ {
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: tbl})
			if err != nil {
				t.Fatal(err)
			}
			if r = reps[0]; r.OK() {
				break
			}
			testdb.Exec(t, raw, r.Fix...)
		}
		if !r.OK() {
			t.Fatalf("%s after its Fix: %q", tbl, r.Problems)
		}
	}
}
