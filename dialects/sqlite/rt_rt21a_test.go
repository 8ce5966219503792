package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Fail-open (lazy check). SQLite's guardTriggerTable takes any name with one of the
// guard's prefixes; ownTriggers skips it, and guardTriggers compares it only when the
// name is among ownTriggerShapes — which has no tombstone triggers when the primary
// key is unknown, as in the lazy check (triggerdoor.go passes no PrimaryKey). The
// PATCH trigger of TestOwnTriggerPatchIdiomRefused, created as
// fencedsql_tombkey_patch, is not refused by the lazy check, and a stale UPDATE
// (token 10) of a row written under token 60 stores its values with no error.
// Right: the pool refuses the table with ErrSchema (the trigger is judged by
// ownTriggers unless it is exactly one of t's own installed triggers).
func TestRTrt21aSQLiteTombNamedPatchTriggerLazyCheck(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw, `CREATE TRIGGER fencedsql_tombkey_patch BEFORE UPDATE ON accounts WHEN NEW.fence_token IS NULL
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
		t.Fatalf("[fail-open] stale UPDATE (token 10) of a row written under token 60 with a PATCH trigger named fencedsql_tombkey_patch: err = %v, row now balance %d token %d (schema.Check OK=%v, reports it: %v); want ErrSchema from the lazy check and the row unchanged",
			err, bal, tok, reps[0].OK(), strings.Contains(strings.Join(reps[0].Problems, " "), "fencedsql_tombkey_patch"))
	}
}

// Over-refusal (regression of the whole-text comparison). SQLite column names are
// case-insensitive, but guardTriggers compares the installed trigger text byte for
// byte with the DDL rebuilt from the lazy check's column names: a column declared
// Fence_Token, guarded by schema.Check with TokenColumn "Fence_Token" (Check: OK),
// makes a pool with the default fence_token (the same column) refuse every write.
// Right: accept the installed guard (compare identifiers case-insensitively, or with
// the catalog's spelling).
func TestRTrt21aSQLiteColumnCaseGuardIsADoor(t *testing.T) {
	ctx := context.Background()
	file := "file:" + t.TempDir() + "/c.db?_pragma=busy_timeout(5000)"
	raw := testdb.Open(t, "sqlite", file, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, Fence_Token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	spec := schema.GuardSpec{Table: "accounts", TokenColumn: "Fence_Token"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	ownExec(t, raw, reps[0].Fix...)
	if reps, _ = schema.Check(ctx, raw, sqlite.Dialect, spec); !reps[0].OK() {
		t.Fatalf("setup: %q", reps[0].Problems)
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `INSERT INTO accounts (id, fence_token, version) VALUES (1, 10, 1)`); err != nil {
		t.Fatalf("[over-refusal] guard installed for column Fence_Token (schema.Check OK); a pool with the default fence_token (same column) refuses: %.300s…; want the write accepted", err)
	}
}

// Fail-open (schema.Check too). As TestRTrt21aSQLiteTombNamedPatchTriggerLazyCheck,
// on a table without a declared primary key: no tombstone DDL is built in schema.Check
// either, so the PATCH trigger named fencedsql_tombins_accounts is judged by neither
// ownTriggers nor guardTriggers. Right: Check reports it (DROP TRIGGER), the pool
// refuses the table, the stale UPDATE changes nothing.
func TestRTrt21aSQLiteTombNamedPatchTriggerNoPrimaryKey(t *testing.T) {
	ctx := context.Background()
	file := "file:" + t.TempDir() + "/n.db?_pragma=busy_timeout(5000)"
	raw := testdb.Open(t, "sqlite", file, `CREATE TABLE accounts (id INTEGER NOT NULL, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 600, 60, 1)`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	ownExec(t, raw, reps[0].Fix...)
	ownExec(t, raw, `CREATE TRIGGER fencedsql_tombins_accounts BEFORE UPDATE ON accounts WHEN NEW.fence_token IS NULL
BEGIN
  UPDATE accounts SET balance = NEW.balance, fence_token = OLD.fence_token, version = OLD.version + 1 WHERE id = OLD.id;
  SELECT RAISE(IGNORE);
END`)
	reps, err = schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	reported := strings.Contains(strings.Join(reps[0].Problems, " "), "fencedsql_tombins_accounts")
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if bal, tok := ownRow(t, raw); bal == -1 || !reported {
		t.Fatalf("[fail-open] no primary key, PATCH trigger named fencedsql_tombins_accounts: schema.Check reports it=%v (problems %q); stale UPDATE (token 10 < 60) err=%v, row balance %d token %d; want it reported and the write refused", reported, reps[0].Problems, err, bal, tok)
	}
}
