package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// ownTriggerDB makes a SQLite file with accounts (row 1: balance 600, token 60) fit by
// schema.Check's Fix (the guard and the tombstones installed), and the plain pool.
func ownTriggerDB(t *testing.T) (file string, raw *sql.DB) {
	t.Helper()
	ctx := context.Background()
	file = "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "t.db")) + "?_pragma=busy_timeout(5000)"
	raw = testdb.Open(t, "sqlite", file)
	ownExec(t, raw, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE audit (id INTEGER, tok BIGINT)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 600, 60, 1)`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	ownExec(t, raw, reps[0].Fix...)
	if reps, err = schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() || !reps[0].Guarded || !reps[0].Tombstoned {
		t.Fatalf("accounts not fit after its Fix: %+v, %v", reps, err)
	}
	return file, raw
}

func ownExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// ownDoors returns the own-trigger doors schema.Check reports on accounts.
func ownDoors(t *testing.T, raw *sql.DB) []dialect.SideDoor {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	var doors []dialect.SideDoor
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorOwnTrigger {
			doors = append(doors, sd)
		}
	}
	if len(doors) > 0 && reps[0].OK() {
		t.Fatalf("own trigger doors in a report that is OK: %+v", reps[0])
	}
	return doors
}

func ownRow(t *testing.T, raw *sql.DB) (balance, token int64) {
	t.Helper()
	if err := raw.QueryRow(`SELECT balance, fence_token FROM accounts WHERE id = 1`).Scan(&balance, &token); err != nil {
		t.Fatal(err)
	}
	return balance, token
}

// SQLite's "PATCH" idiom (it cannot assign NEW): a BEFORE UPDATE trigger that, when
// the token arrives NULL, writes the row itself with the old token kept and the version
// advanced, then drops the original change with RAISE(IGNORE). Under the fencing NULL
// of a stale fenced UPDATE it stored the stale holder's values with no error, the guard
// installed (red-team "rtf" finding F2b). It is an own-trigger door: a fresh pool
// refuses the table with ErrSchema (nothing written), schema.Check reports it with DROP
// TRIGGER; the guard's and tombstones' triggers, a BEFORE trigger that checks an
// unrelated column and an AFTER trigger that logs the token are not. After the fix the
// stale write is fenced and a current one passes.
func TestOwnTriggerPatchIdiomRefused(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw,
		`CREATE TRIGGER acc_check BEFORE UPDATE ON accounts WHEN NEW.balance < -1000 BEGIN SELECT RAISE(ABORT, 'overdraft'); END`,
		`CREATE TRIGGER acc_log AFTER UPDATE ON accounts BEGIN INSERT INTO audit (id, tok) VALUES (NEW.id, NEW.fence_token); END`)
	if doors := ownDoors(t, raw); len(doors) != 0 {
		t.Fatalf("no-door triggers reported: %+v", doors)
	}
	ownExec(t, raw, `CREATE TRIGGER accounts_patch BEFORE UPDATE ON accounts WHEN NEW.fence_token IS NULL
BEGIN
  UPDATE accounts SET balance = NEW.balance, fence_token = OLD.fence_token, version = OLD.version + 1 WHERE id = OLD.id;
  SELECT RAISE(IGNORE);
END`)
	open := func() *sql.DB {
		db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
		return db
	}
	for _, tok := range []uint64{10, 61} { // stale, then current: the table is refused
		_, err := open().ExecContext(fencedsql.WithToken(ctx, tok), `UPDATE accounts SET balance = -1 WHERE id = 1`)
		if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "accounts_patch") || !strings.Contains(err.Error(), "DROP TRIGGER") ||
			strings.Contains(err.Error(), "acc_check") || strings.Contains(err.Error(), "acc_log") {
			t.Fatalf("UPDATE under token %d with the PATCH trigger: %v, want ErrSchema naming accounts_patch only", tok, err)
		}
	}
	if bal, tok := ownRow(t, raw); bal != 600 || tok != 60 {
		t.Fatalf("row 1 = balance %d token %d after refused writes", bal, tok)
	}
	doors := ownDoors(t, raw)
	if len(doors) != 1 || doors[0].Object != "accounts_patch on accounts" || doors[0].Note ||
		len(doors[0].Fix) != 1 || doors[0].Fix[0] != `DROP TRIGGER IF EXISTS "accounts_patch"` ||
		!strings.Contains(doors[0].Problem, "RAISE(IGNORE)") || !strings.Contains(doors[0].Problem, "writes accounts itself") {
		t.Fatalf("own trigger doors: %+v", doors)
	}
	ownExec(t, raw, doors[0].Fix...)
	if doors := ownDoors(t, raw); len(doors) != 0 {
		t.Fatalf("after the fix: %+v", doors)
	}
	db := open()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = -1 WHERE id = 1`)
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE after the fix: %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 61), `UPDATE accounts SET balance = 610 WHERE id = 1`); err != nil {
		t.Fatalf("current UPDATE after the fix: %v", err)
	}
	if bal, tok := ownRow(t, raw); bal != 610 || tok != 61 {
		t.Fatalf("row 1 = balance %d token %d after the current write", bal, tok)
	}
}

// Which of the table's own triggers are doors: BEFORE INSERT or UPDATE ones (BEFORE
// is SQLite's default timing) whose WHEN clause or body names a fencing column, and
// triggers of any timing and event whose body writes the table or that use
// RAISE(IGNORE) (red-team rt48j: an AFTER or DELETE one too); not an AFTER trigger
// that logs the token, a DELETE trigger that refuses with RAISE(ABORT), nor ones that
// check other columns.
func TestOwnTriggerDoorsJudged(t *testing.T) {
	_, raw := ownTriggerDB(t)
	ownExec(t, raw,
		// Doors.
		`CREATE TRIGGER d_ignore BEFORE UPDATE ON accounts WHEN NEW.balance < 0 BEGIN SELECT RAISE ( /* c */ ignore ); END`,
		`CREATE TRIGGER d_default UPDATE OF balance ON accounts BEGIN UPDATE "Accounts" SET balance = NEW.balance WHERE id = OLD.id; END`,
		`CREATE TRIGGER d_when BEFORE INSERT ON accounts FOR EACH ROW WHEN NEW."VERSION" IS NULL BEGIN INSERT INTO audit VALUES (NEW.id, 0); END`,
		`CREATE TRIGGER IF NOT EXISTS main.d_body BEFORE INSERT ON accounts BEGIN INSERT INTO audit VALUES (NEW.id, NEW.fence_token); END`,
		// Not a door: an AFTER UPDATE trigger's nested write is fenced by the
		// guards' triggers it fires (the updated_at touch idiom).
		`CREATE TRIGGER d_after AFTER UPDATE ON accounts BEGIN UPDATE accounts SET balance = balance WHERE id = -1; INSERT INTO audit VALUES (NEW.id, NEW.fence_token); END`,
		// Doors since red-team rt48j: RAISE(IGNORE) in any trigger.
		`CREATE TRIGGER d_delete BEFORE DELETE ON accounts WHEN OLD.fence_token > 100 BEGIN SELECT RAISE(IGNORE); END`,
		// Not doors.
		`CREATE TRIGGER n_check BEFORE INSERT ON accounts WHEN NEW.balance < 0 BEGIN SELECT RAISE(ABORT, 'negative'); END`,
		`CREATE TRIGGER n_log AFTER INSERT ON accounts WHEN NEW.fence_token > 0 BEGIN INSERT INTO audit VALUES (NEW.id, NEW.fence_token); END`,
		`CREATE TRIGGER n_delete BEFORE DELETE ON accounts WHEN OLD.fence_token > 100 BEGIN SELECT RAISE(ABORT, 'kept'); END`)
	var got []string
	for _, sd := range ownDoors(t, raw) {
		got = append(got, sd.Object)
		if len(sd.Fix) != 1 || !strings.HasPrefix(sd.Fix[0], "DROP TRIGGER IF EXISTS ") {
			t.Errorf("fix of %s: %q", sd.Object, sd.Fix)
		}
	}
	if want := "d_body on accounts,d_default on accounts,d_delete on accounts,d_ignore on accounts,d_when on accounts"; strings.Join(got, ",") != want {
		t.Fatalf("own trigger doors %q, want %q", strings.Join(got, ","), want)
	}
}

// guardedAccounts: accounts with the guard and the tombstones installed by schema.Check's
// Fix (a second Check reports it OK), row 1 and 2 written under token 20.
func guardedAccounts(t *testing.T) *sql.DB {
	t.Helper()
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t), "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	raw.SetMaxOpenConns(1)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() || !reps[0].Guarded || !reps[0].Tombstoned {
		t.Fatalf("after the fix: %+v %v", reps, err)
	}
	testdb.Exec(t, raw, "INSERT INTO accounts (id, fence_token, version) VALUES (1, 20, 1), (2, 20, 1), (3, 5, 1)")
	return raw
}

// Fail-open (lazy check). SQLite's guardTriggerTable takes any name with one of the
// guard's prefixes; ownTriggers skips it, and guardTriggers compares it only when the
// name is among ownTriggerShapes — which has no tombstone triggers when the primary
// key is unknown, as in the lazy check (triggerdoor.go passes no PrimaryKey). The
// PATCH trigger of TestOwnTriggerPatchIdiomRefused, created as
// fencedsql_tombkey_patch, is not refused by the lazy check, and a stale UPDATE
// (token 10) of a row written under token 60 stores its values with no error.
// Right: the pool refuses the table with ErrSchema (the trigger is judged by
// ownTriggers unless it is exactly one of t's own installed triggers).
func TestTombNamedPatchTriggerRefusedByLazyCheck(t *testing.T) {
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
func TestColumnCaseGuardNotReportedAsDoor(t *testing.T) {
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

// Fail-open (schema.Check too). As TestTombNamedPatchTriggerRefusedByLazyCheck,
// on a table without a declared primary key: no tombstone DDL is built in schema.Check
// either, so the PATCH trigger named fencedsql_tombins_accounts is judged by neither
// ownTriggers nor guardTriggers. Right: Check reports it (DROP TRIGGER), the pool
// refuses the table, the stale UPDATE changes nothing.
func TestTombNamedPatchTriggerWithoutPrimaryKeyReported(t *testing.T) {
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

// TestImpostorUnicodeFoldReported: guardTriggers compares a guard-named trigger's
// text with the text this version writes using strings.EqualFold, i.e. Unicode
// simple case folding, under which U+017F (ſ, LATIN SMALL LETTER LONG S) equals
// 's'. SQLite, however, folds only ASCII in identifiers: "fencedſql_tomb_accounts" is
// another table. A plain connection creates such a decoy (empty) tombstone table and
// re-creates fencedsql_tombins_accounts reading the decoy instead of the real
// tombstone table: every character the same under EqualFold, the version marker
// kept. schema.Check reports the table OK, the pool's lazy check lets it through, and
// a stale INSERT (token 10) brings back a key deleted under token 60 through the
// fenced pool with no error.
// Right: compare the trigger text byte for byte (or fold ASCII only, as SQLite does),
// so the impostor is an own-trigger door: schema.Check not OK (Fix re-creates the
// trigger), the pool refuses the table with ErrSchema, and the stale INSERT fails.
func TestImpostorUnicodeFoldReported(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	var orig string
	if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tombins_accounts'`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	decoy := "fencedſql_tomb_accounts" // U+017F for the 's' of fencedsql
	forged := strings.ReplaceAll(orig, `"fencedsql_tomb_accounts"`, `"`+decoy+`"`)
	if forged == orig || !strings.EqualFold(forged, orig) {
		t.Fatalf("could not forge: %q", orig)
	}
	ownExec(t, raw, `CREATE TABLE "`+decoy+`" AS SELECT * FROM fencedsql_tomb_accounts WHERE 0`,
		`DROP TRIGGER fencedsql_tombins_accounts`, forged)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Fatalf("schema.Check OK with fencedsql_tombins_accounts forged with a Unicode-folded decoy table name")
	}
	testdb.Exec(t, raw, "DELETE FROM accounts WHERE id = 1") // under token 60: the real tombstone
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
	var n int
	raw.QueryRow(`SELECT count(*) FROM accounts WHERE id = 1`).Scan(&n)
	if !errors.Is(err, fencedsql.ErrSchema) || n != 0 {
		t.Fatalf("stale INSERT (token 10) of key 1 deleted under token 60, the trigger forged: err = %v, rows now %d; want ErrSchema and nothing inserted", err, n)
	}
}

// TestTriggerDeletingTombstonesReported: a trigger of the table's own, under an ordinary
// name, whose body deletes the key's tombstone before the tombstone guard's AFTER
// INSERT check reads it:
//
//	CREATE TRIGGER aa_clean BEFORE INSERT ON accounts BEGIN
//	  DELETE FROM fencedsql_tomb_accounts WHERE id = NEW.id; END
//
// ownTriggers judges a BEFORE trigger only by whether it names the token or version
// column, writes the table itself or uses RAISE(IGNORE); otherTriggers only by whether
// another table's trigger writes the guarded table. Neither looks at writes to the
// tombstone table (nor at triggers of other tables that write it), so schema.Check
// reports the table OK, the pool's lazy check passes, and a stale INSERT (token 10)
// through the fenced pool brings back a key deleted under token 60.
// Right: a trigger (on the table or any other table of its schema) whose body writes
// fencedsql_tomb_<table> (or the token floor) is a door: reported by schema.Check with
// DROP TRIGGER as Fix, and the pool refuses the table (ErrSchema).
func TestTriggerDeletingTombstonesReported(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw, `CREATE TRIGGER aa_clean BEFORE INSERT ON accounts BEGIN DELETE FROM fencedsql_tomb_accounts WHERE id = NEW.id; END`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Fatal("schema.Check OK with a trigger that deletes tombstones")
	}
	testdb.Exec(t, raw, "DELETE FROM accounts WHERE id = 1") // under token 60: the real tombstone
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
	var n int
	raw.QueryRow(`SELECT count(*) FROM accounts WHERE id = 1`).Scan(&n)
	if !errors.Is(err, fencedsql.ErrSchema) || n != 0 {
		t.Fatalf("stale INSERT (token 10) of key 1 deleted under token 60 with a trigger deleting tombstones: err = %v, rows now %d; want ErrSchema from the pool", err, n)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() {
		t.Fatalf("after the Fix: %+v %v", reps, err)
	}
}
