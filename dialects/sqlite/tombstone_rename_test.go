package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const tombRenameLedger = "CREATE TABLE ledger (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"

// tombRenamed guards ledger, deletes its key 1 under token 20 through the fenced
// driver and renames it to ledger2 (ALTER TABLE … RENAME TO keeps its five
// fencedsql_tomb*_ledger triggers, which record into fencedsql_tomb_ledger). It returns
// the plain connection, the database path and a helper that applies schema.Check's Fix
// for a table until it reports OK (at most three rounds).
func tombRenamed(t *testing.T, ctx context.Context) (*sql.DB, string, func(string) schema.TableReport) {
	path := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", path, tombRenameLedger, "INSERT INTO ledger (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1)")
	raw.SetMaxOpenConns(1)
	fix := func(table string) schema.TableReport {
		t.Helper()
		var r schema.TableReport
		for i := 0; i < 3; i++ {
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: table})
			if err != nil {
				t.Fatal(err)
			}
			if r = reps[0]; r.OK() {
				break
			}
			testdb.Exec(t, raw, r.Fix...)
		}
		return r
	}
	fix("ledger")
	old := testdb.Open(t, "fenced-sqlite", path+"&fenced_tables=ledger")
	if _, err := old.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	testdb.Exec(t, raw, "ALTER TABLE ledger RENAME TO ledger2")
	return raw, path, fix
}

// requireLedger2Fenced checks that a stale holder (token 5) cannot re-insert key 1 of
// ledger2, deleted under token 20 before the rename.
func requireLedger2Fenced(t *testing.T, ctx context.Context, raw *sql.DB, path string) {
	t.Helper()
	fenced := testdb.Open(t, "fenced-sqlite", path+"&fenced_tables=ledger2")
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO ledger2 (id, balance, version) VALUES (1, 666, 1)")
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM ledger2 WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("the stale INSERT of key 1 under token 5 into ledger2 returned %v (%d rows); want ErrFenced and no row", err, n)
	}
}

// TestTombstoneRenamedTableKeepsTombstonesFromNewNamesake (red-team rt31a F2, was
// fail-open). Key 1 of ledger is deleted under token 20; ledger is renamed to ledger2
// and its guard re-installed (schema.Check's Fix), then a new table is created under
// the old name and guarded. The re-install on ledger2 must carry the tombstones its
// old-named triggers recorded into fencedsql_tomb_ledger over to
// fencedsql_tomb_ledger2 and drop those triggers, so that the new ledger's install
// drops nothing of ledger2's; the old name's tombstone table stays, and the new ledger
// shares it (a table swap's new table is the one whose tombstones they are).
func TestTombstoneRenamedTableKeepsTombstonesFromNewNamesake(t *testing.T) {
	ctx := context.Background()
	raw, path, fix := tombRenamed(t, ctx)
	if r := fix("ledger2"); !r.OK() {
		t.Fatalf("ledger2 after its Fix: %q", r.Problems)
	}
	var tok int64
	if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger2 WHERE id = 1").Scan(&tok); err != nil || tok != 20 {
		t.Fatalf("fencedsql_tomb_ledger2 holds key 1 at %d (%v); want 20 carried over", tok, err)
	}
	var left int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'fencedsql\\_tomb%\\_ledger' ESCAPE '\\'").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d tombstone triggers of the old name left (%v); want them dropped after the carry-over", left, err)
	}
	testdb.Exec(t, raw, tombRenameLedger)
	if r := fix("ledger"); !r.OK() {
		t.Fatalf("the new ledger after its Fix: %q", r.Problems)
	}
	if r := fix("ledger2"); !r.OK() {
		t.Fatalf("ledger2 after the new ledger's install: %q", r.Problems)
	}
	requireLedger2Fenced(t, ctx, raw, path)
	// The new ledger shares the old name's tombstone table (in a table swap it is the
	// table whose tombstones they are): key 1 under token 5 is refused there too, the
	// documented over-refusal of a table that is new in fact.
	fresh := testdb.Open(t, "fenced-sqlite", path+"&fenced_tables=ledger")
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO ledger (id, balance, version) VALUES (1, 1, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("key 1 of the new ledger under token 5: %v; want ErrFenced (it shares the old name's tombstones)", err)
	}
}

// TestTombstoneNamesakeInstallKeepsRenamedTablesTombstones (red-team rt31a F2): the
// other order. The new ledger is guarded before ledger2's guard is re-installed (a
// table swap that keeps the old table does this): its tombstone triggers' names are
// still on ledger2. The new ledger's Fix must not drop them with ledger2's tombstones:
// it first installs ledger2's own tombstone guard, which carries them over to
// fencedsql_tomb_ledger2 and frees the names.
func TestTombstoneNamesakeInstallKeepsRenamedTablesTombstones(t *testing.T) {
	ctx := context.Background()
	raw, path, fix := tombRenamed(t, ctx)
	testdb.Exec(t, raw, tombRenameLedger)
	if r := fix("ledger"); !r.OK() {
		t.Fatalf("the new ledger after its Fix: %q", r.Problems)
	}
	var tok int64
	if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger2 WHERE id = 1").Scan(&tok); err != nil || tok != 20 {
		t.Fatalf("fencedsql_tomb_ledger2 holds key 1 at %d (%v); want 20 carried over by the new ledger's Fix", tok, err)
	}
	if r := fix("ledger2"); !r.OK() {
		t.Fatalf("ledger2 after its Fix: %q", r.Problems)
	}
	requireLedger2Fenced(t, ctx, raw, path)
}
