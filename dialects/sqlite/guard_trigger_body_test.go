package sqlite_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// SQLite: ownTriggers skips every trigger whose name starts with "fencedsql_" (meant
// for the guard, floor and tombstone triggers). The PATCH trigger that
// TestOwnTriggerPatchIdiomRefused shows refused as accounts_patch, created as
// fencedsql_patch, is neither reported by schema.Check nor refused by the lazy check,
// and a stale UPDATE (token 10) of a row written under token 60 stores its values
// through the fenced pool with no error, the guard installed. Right: skip only the
// guard's own triggers by exact name (fencedsql_guard_<table>, fencedsql_floor_<table>,
// fencedsql_tombdel_/tombins_/tombkey_<table>), report this one, refuse the pool with
// ErrSchema.
func TestOwnTriggerNamedLikeGuardReported(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw, `CREATE TRIGGER fencedsql_patch BEFORE UPDATE ON accounts WHEN NEW.fence_token IS NULL
BEGIN
  UPDATE accounts SET balance = NEW.balance, fence_token = OLD.fence_token, version = OLD.version + 1 WHERE id = OLD.id;
  SELECT RAISE(IGNORE);
END`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if bal, tok := ownRow(t, raw); bal == -1 {
		t.Fatalf("stale UPDATE (token 10) of a row written under token 60 with a PATCH trigger named fencedsql_patch: err = %v, row now balance %d token %d; schema.Check OK=%v %q; want ErrSchema (or ErrFenced) and the row unchanged", err, bal, tok, reps[0].OK(), reps[0].Problems)
	}
}

// SQLite: TombstoneInstalledQuery requires only the three trigger names and the
// version marker comment in their text (instr(sql, '/* fencedsql tombstone guard v2
// */')), and GuardInstalledQuery only "fencedsql_floor" somewhere in the guard's
// text. The tombstone INSERT trigger re-created with the marker and a WHEN clause
// that is never true leaves schema.Check reporting everything installed, while a
// stale INSERT re-creates a key deleted under a newer token. Right: compare the
// triggers' text with the DDL this version writes (it is deterministic), not a
// marker a comment can carry; the stale INSERT is refused.
func TestCheckReportsTombstoneTriggerWithMarkerOnly(t *testing.T) {
	ctx := context.Background()
	raw := guardedAccounts(t)
	testdb.Exec(t, raw, "DROP TRIGGER fencedsql_tombins_accounts",
		"CREATE TRIGGER fencedsql_tombins_accounts AFTER INSERT ON accounts FOR EACH ROW WHEN 0 BEGIN /* fencedsql tombstone guard v4 */ SELECT 1; END",
		"DELETE FROM accounts WHERE id = 2")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.ExecContext(ctx, "INSERT INTO accounts (id, fence_token, version) VALUES (2, 5, 1)")
	if err == nil && reps[0].OK() && reps[0].Tombstoned {
		t.Fatalf("tombstone INSERT trigger emptied (marker kept): schema.Check OK and Tombstoned, and a stale INSERT (token 5) of key 2 deleted under token 20 was accepted; want the trigger reported as not installed")
	}
}
