package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt29aReplaceCase runs q (from a plain connection) on a guarded, tombstoned accounts
// table holding row 1 (token 20) and row 3 (token 5); q must delete row 1; then an
// INSERT of key 1 under token 10 must be refused by the tombstone guard.
func rt29aReplaceCase(t *testing.T, ddl string, more []string, rows, q, reinsert string) {
	t.Helper()
	ctx := context.Background()
	raw := uniqDB(t, ddl, more...)
	testdb.Exec(t, raw, rows)
	if _, err := raw.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE id = 1").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%s did not delete row 1 (%d rows, %v): the test does not collide", q, n, err)
	}
	_, err := raw.ExecContext(ctx, reinsert)
	if err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
		t.Fatalf("%s deleted row 1 (token 20); then the INSERT of key 1 under an older token: %v; want the tombstone guard's refusal", q, err)
	}
}

// TestRTrt29aReplaceUniqueNewerDeleterToken: a REPLACE (or UPDATE OR REPLACE) from a
// plain connection by the NEWEST holder (token 30) that collides on UNIQUE(email) with
// row 1 (token 20) deletes row 1: holder 30 deleted it. Tombstone guard v4 records row
// 1's tombstone at the row's own token (20), not the deleter's (30), so holder 25 —
// older than the deleter — inserts key 1 again. G9: "If a holder with token t deleted a
// row, no INSERT … under a token older than t may succeed, whether it goes through
// the wrapper or hits the database-side guards". Right behaviour: the displaced row's
// tombstone is recorded at max(its token, NEW's token) (as the wrapper's fenced DELETE
// records the deleter's token), so the INSERT of key 1 under 25 is refused.
func TestRTrt29aReplaceUniqueNewerDeleterToken(t *testing.T) {
	const rows = "INSERT INTO accounts (id, email, a, b, active, fence_token, version) VALUES (1, 'A', 1, 1, 1, 20, 1), (3, 'b', 1, 2, 1, 5, 1)"
	for _, q := range []string{
		"REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'A', 7, 7, 30, 1)",
		"UPDATE OR REPLACE accounts SET email = 'A', fence_token = 30, version = version + 1 WHERE id = 3",
	} {
		t.Run(q, func(t *testing.T) {
			rt29aReplaceCase(t, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (email))", nil, rows, q,
				"INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, 'zzz', 9, 9, 25, 1)")
		})
	}
}

// TestRTrt29aTombstoneTableUniqueReplace: the tombstone table kept by CREATE TABLE IF
// NOT EXISTS carries an extra `UNIQUE (fence_token) ON CONFLICT REPLACE` (a
// migration's table). guardTableProblems judges only the token column's type and the
// foreign keys, so the table passes; but the DELETE trigger's upsert (ON CONFLICT of
// the key only) resolves the other constraint by its own clause, REPLACE: recording
// key 2's tombstone at token 100 deletes key 1's tombstone at token 100. A fenced
// DELETE of both rows under 100 through the pool leaves one tombstone, and the stale
// holder (90) re-inserts key 1 through the pool.
// Right behaviour: a guard table carrying any UNIQUE constraint or index other than
// its key (or any ON CONFLICT clause) is a SideDoorGuardTable door: the lazy check
// refuses accounts (ErrSchema), schema.Check reports it with a rebuild Fix; in any
// case the stale INSERT must not succeed.
func TestRTrt29aTombstoneTableUniqueReplace(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t) // accounts guarded + tombstoned; row 1 at token 60
	exec := func(s ...string) { t.Helper(); ownExec(t, raw, s...) }
	var orig string
	if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tomb_accounts'`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(orig, ")")
	forged := orig[:i] + `, UNIQUE (fence_token) ON CONFLICT REPLACE` + orig[i:]
	exec(`DROP TABLE fencedsql_tomb_accounts`, forged,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 1, 60, 1)`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Errorf("schema.Check: OK with a tombstone table carrying UNIQUE (fence_token) ON CONFLICT REPLACE; want a guard table door")
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), `DELETE FROM accounts WHERE id IN (1, 2)`); err != nil {
		t.Logf("fenced DELETE under 100: %v", err)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM fencedsql_tomb_accounts`).Scan(&n)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), `INSERT INTO accounts (id, balance) VALUES (1, -1)`); !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT (token 90) of key 1 deleted under 100 (tombstones left: %d): %v, want ErrSchema or ErrFenced", n, err)
	}
}

// rt29aOldGuard and rt29aOldFloor are the row guard's two triggers on accounts as the
// previous release (c8d43c3, before the typeof check) installs them, read from
// sqlite_master of a database that release's schema.Check Fix set up.
const rt29aOldGuard = "CREATE TRIGGER \"fencedsql_guard_accounts\" BEFORE UPDATE ON \"accounts\" FOR EACH ROW\nWHEN NEW.\"fence_token\" IS NULL OR NEW.\"version\" IS NULL OR NEW.\"fence_token\" < OLD.\"fence_token\" OR NEW.\"version\" <= OLD.\"version\" OR NOT COALESCE(NEW.\"fence_token\" >= (SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1), 0)\nBEGIN\n  SELECT CASE WHEN NEW.\"fence_token\" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: accounts.fence_token (fencedsql guard)') WHEN NEW.\"version\" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: accounts.version (fencedsql guard)') WHEN NEW.\"fence_token\" < OLD.\"fence_token\" THEN RAISE(ABORT, 'fencedsql: guard on accounts: UPDATE lowers the fence token') WHEN NEW.\"version\" <= OLD.\"version\" THEN RAISE(ABORT, 'fencedsql: guard on accounts: UPDATE does not advance the version') ELSE RAISE(ABORT, 'fencedsql: token floor on accounts: token below the floor') END;\nEND"

const rt29aOldFloor = "CREATE TRIGGER \"fencedsql_floor_accounts\" BEFORE INSERT ON \"accounts\" FOR EACH ROW\nWHEN NEW.\"fence_token\" IS NULL OR NEW.\"version\" IS NULL OR NOT COALESCE(NEW.\"fence_token\" >= (SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1), 0)\nBEGIN\n  SELECT CASE WHEN NEW.\"fence_token\" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: accounts.fence_token (fencedsql guard)') WHEN NEW.\"version\" IS NULL THEN RAISE(ABORT, 'NOT NULL constraint failed: accounts.version (fencedsql guard)') ELSE RAISE(ABORT, 'fencedsql: token floor on accounts: token below the floor') END;\nEND"

// TestRTrt29aOlderGuardTakenForForged (over-refusal on upgrade / unclear error): a
// table guarded by the previous release (its two row-guard triggers, without the new
// typeof test). SQLite's row guard carries no version marker and GuardInstalledQuery
// only counts the two triggers, so schema.Check reports it Guarded, while the whole-text
// comparison (guardTriggers) calls both triggers changed ("carries the name of one of
// fencedsql's guard triggers but not the text this version installs: a changed guard
// may let through …"), and the lazy check refuses every write to every such table after
// the library upgrade, in words that say the guard was tampered with. Right behaviour
// (as for the tombstone guard's tombVersion): the guard's text carries a version marker;
// an install of an earlier version is reported as not installed (Guarded false, "an
// earlier version: re-run fencedsql-schema -apply"), and the lazy check's refusal, if
// kept, says so instead of reporting a forged trigger.
func TestRTrt29aOlderGuardTakenForForged(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw, "DROP TRIGGER fencedsql_guard_accounts", "DROP TRIGGER fencedsql_floor_accounts", rt29aOldGuard, rt29aOldFloor)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].Guarded {
		t.Errorf("schema.Check: Guarded = true for the previous release's guard (problems %q); want it reported as an earlier version, not installed", reps[0].Problems)
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 1 WHERE id = 1")
	if err != nil && strings.Contains(err.Error(), "a changed guard") {
		t.Errorf("fenced write on a table guarded by the previous release: %v; want it named an earlier version, not a changed guard", err)
	}
}

// rt29aLazyCheckTime guards n tables (each with a UNIQUE column, as the v4 tombstone
// guard's REPLACE triggers cover) and returns the time of the first fenced write to
// one of them through a fresh pool (its lazy check), the best of three pools.
func rt29aLazyCheckTime(t *testing.T, n int) time.Duration {
	t.Helper()
	ctx := context.Background()
	file := "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "t.db")) + "?_pragma=busy_timeout(5000)"
	raw := testdb.Open(t, "sqlite", file)
	var specs []schema.GuardSpec
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t%03d", i)
		names = append(names, name)
		ownExec(t, raw, "CREATE TABLE "+name+" (id INTEGER PRIMARY KEY, email TEXT UNIQUE, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
		specs = append(specs, schema.GuardSpec{Table: name})
	}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		ownExec(t, raw, r.Fix...)
	}
	best := time.Hour
	for i := 0; i < 3; i++ {
		db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables="+strings.Join(names, ","))
		start := time.Now()
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), fmt.Sprintf("INSERT INTO t000 (id, balance) VALUES (%d, 1)", i+1)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < best {
			best = d
		}
		db.Close()
	}
	return best
}
