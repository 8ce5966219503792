package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const tombRenameLedger = "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"

// tombRenamed guards ledger, deletes its key 1 under token 20 through the fenced
// driver and renames it to ledger2 (RENAME TABLE keeps its fencedsql_tomb*_ledger
// triggers, which record into fencedsql_tomb_ledger). It returns the admin connection,
// the DSN and a helper that applies schema.Check's Fix for a table and checks again.
func tombRenamed(t *testing.T, ctx context.Context) (*sql.DB, string, func(string) schema.TableReport) {
	admin, dsn := triggerNamesSetup(t, "ledger", tombRenameLedger)
	fix := func(table string) schema.TableReport {
		t.Helper()
		reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		testdb.Exec(t, admin, reps[0].Fix...)
		reps, err = schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		return reps[0]
	}
	old := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
	if _, err := old.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	testdb.Exec(t, admin, "RENAME TABLE ledger TO ledger2")
	return admin, dsn, fix
}

// requireLedger2Fenced checks that a stale holder (token 5) cannot re-insert key 1 of
// ledger2, deleted under token 20 before the rename.
func requireLedger2Fenced(t *testing.T, ctx context.Context, admin *sql.DB, dsn string) {
	t.Helper()
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger2")
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO ledger2 (id, balance, version) VALUES (1, 666, 1)")
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM ledger2 WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("the stale INSERT of key 1 under token 5 into ledger2 returned %v (%d rows); want ErrFenced and no row", err, n)
	}
}

// TestTombstoneRenamedTableKeepsTombstonesFromNewNamesake (red-team rt31a F1, was
// fail-open). Key 1 of ledger is deleted under token 20; ledger is renamed to ledger2
// and its guard re-installed (schema.Check's Fix), then a new table is created under
// the old name and guarded. The re-install on ledger2 must carry the tombstones its
// old-named triggers recorded into fencedsql_tomb_ledger over to
// fencedsql_tomb_ledger2 and drop those triggers, so that the new ledger's install
// drops nothing of ledger2's; the old name's tombstone table stays, and the new ledger
// shares it (a table swap's new table is the one whose tombstones they are).
func TestTombstoneRenamedTableKeepsTombstonesFromNewNamesake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, dsn, fix := tombRenamed(t, ctx)
	if r := fix("ledger2"); !r.OK() {
		t.Fatalf("ledger2 after its Fix: %q", r.Problems)
	}
	var tok int64
	if err := admin.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger2 WHERE id = 1").Scan(&tok); err != nil || tok != 20 {
		t.Fatalf("fencedsql_tomb_ledger2 holds key 1 at %d (%v); want 20 carried over", tok, err)
	}
	var left int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'fencedsql\\_tomb%\\_ledger'").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d tombstone triggers of the old name left (%v); want them dropped after the carry-over", left, err)
	}
	testdb.Exec(t, admin, tombRenameLedger)
	if r := fix("ledger"); !r.OK() {
		t.Fatalf("the new ledger after its Fix: %q", r.Problems)
	}
	if r := fix("ledger2"); !r.OK() {
		t.Fatalf("ledger2 after the new ledger's install: %q", r.Problems)
	}
	requireLedger2Fenced(t, ctx, admin, dsn)
	// The new ledger shares the old name's tombstone table (in a table swap it is the
	// table whose tombstones they are): key 1 under token 5 is refused there too, the
	// documented over-refusal of a table that is new in fact.
	fresh := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger")
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO ledger (id, balance, version) VALUES (1, 1, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("key 1 of the new ledger under token 5: %v; want ErrFenced (it shares the old name's tombstones)", err)
	}
}

// TestTombstoneNamesakeInstallKeepsRenamedTablesTombstones (red-team rt31a F1): the
// other order. The new ledger is guarded before ledger2's guard is re-installed (a
// table swap that keeps the old table does this): its tombstone triggers' names are
// still on ledger2. The new ledger's Fix must not drop them with ledger2's tombstones:
// it first installs ledger2's own tombstone guard, which carries them over to
// fencedsql_tomb_ledger2 and frees the names.
func TestTombstoneNamesakeInstallKeepsRenamedTablesTombstones(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, dsn, fix := tombRenamed(t, ctx)
	testdb.Exec(t, admin, tombRenameLedger)
	if r := fix("ledger"); !r.OK() {
		t.Fatalf("the new ledger after its Fix: %q", r.Problems)
	}
	var tok int64
	if err := admin.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger2 WHERE id = 1").Scan(&tok); err != nil || tok != 20 {
		t.Fatalf("fencedsql_tomb_ledger2 holds key 1 at %d (%v); want 20 carried over by the new ledger's Fix", tok, err)
	}
	if r := fix("ledger2"); !r.OK() {
		t.Fatalf("ledger2 after its Fix: %q", r.Problems)
	}
	requireLedger2Fenced(t, ctx, admin, dsn)
}

// TestTombstoneNamesakeRefusedWhenRenamedTableCannotKeepThem (red-team rt31a F1): where
// the table that keeps the new ledger's tombstone trigger names has no primary key to
// keep its tombstones under, the new ledger's tombstone guard is refused —
// schema.Check reports it without a Fix dropping those triggers, schema.TombstoneFix
// fails with dialect.ErrTombstoneMoved — and ledger2's old triggers keep refusing the
// stale INSERT.
func TestTombstoneNamesakeRefusedWhenRenamedTableCannotKeepThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	admin, _, _ := tombRenamed(t, ctx)
	testdb.Exec(t, admin, "ALTER TABLE ledger2 DROP PRIMARY KEY", tombRenameLedger)
	reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0]
	if r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), "ledger2") {
		t.Fatalf("schema.Check on the new ledger: OK=%v, problems %q; want the tombstone names ledger2 holds reported", r.OK(), r.Problems)
	}
	for _, s := range r.Fix {
		if strings.Contains(s, "DROP TRIGGER IF EXISTS `fencedsql_tomb") {
			t.Fatalf("the new ledger's Fix drops a tombstone trigger ledger2 holds: %q", s)
		}
	}
	if _, err := schema.TombstoneFix(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "ledger"}); !errors.Is(err, dialect.ErrTombstoneMoved) {
		t.Fatalf("schema.TombstoneFix on the new ledger: %v; want dialect.ErrTombstoneMoved", err)
	}
	testdb.Exec(t, admin, r.Fix...) // the row guard's statements
	_, err = admin.ExecContext(ctx, "INSERT INTO ledger2 (id, balance, fence_token, version) VALUES (1, 666, 5, 1)")
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM ledger2 WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err == nil || n != 0 {
		t.Fatalf("the stale plain INSERT of key 1 under token 5 into ledger2 returned %v (%d rows); want the tombstone refusal", err, n)
	}
}
