package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
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
// is SQLite's default timing) whose WHEN clause or body names a fencing column, whose
// body writes the table, or that use RAISE(IGNORE) (alone it turns the stale write into
// a silent success); not AFTER or DELETE triggers, nor ones that check other columns.
func TestOwnTriggerDoorsJudged(t *testing.T) {
	_, raw := ownTriggerDB(t)
	ownExec(t, raw,
		// Doors.
		`CREATE TRIGGER d_ignore BEFORE UPDATE ON accounts WHEN NEW.balance < 0 BEGIN SELECT RAISE ( /* c */ ignore ); END`,
		`CREATE TRIGGER d_default UPDATE OF balance ON accounts BEGIN UPDATE "Accounts" SET balance = NEW.balance WHERE id = OLD.id; END`,
		`CREATE TRIGGER d_when BEFORE INSERT ON accounts FOR EACH ROW WHEN NEW."VERSION" IS NULL BEGIN INSERT INTO audit VALUES (NEW.id, 0); END`,
		`CREATE TRIGGER IF NOT EXISTS main.d_body BEFORE INSERT ON accounts BEGIN INSERT INTO audit VALUES (NEW.id, NEW.fence_token); END`,
		// Not doors.
		`CREATE TRIGGER n_after AFTER UPDATE ON accounts BEGIN UPDATE accounts SET balance = balance WHERE id = -1; INSERT INTO audit VALUES (NEW.id, NEW.fence_token); END`,
		`CREATE TRIGGER n_delete BEFORE DELETE ON accounts WHEN OLD.fence_token > 100 BEGIN SELECT RAISE(IGNORE); END`,
		`CREATE TRIGGER n_check BEFORE INSERT ON accounts WHEN NEW.balance < 0 BEGIN SELECT RAISE(ABORT, 'negative'); END`)
	var got []string
	for _, sd := range ownDoors(t, raw) {
		got = append(got, sd.Object)
		if len(sd.Fix) != 1 || !strings.HasPrefix(sd.Fix[0], "DROP TRIGGER IF EXISTS ") {
			t.Errorf("fix of %s: %q", sd.Object, sd.Fix)
		}
	}
	if want := "d_body on accounts,d_default on accounts,d_ignore on accounts,d_when on accounts"; strings.Join(got, ",") != want {
		t.Fatalf("own trigger doors %q, want %q", strings.Join(got, ","), want)
	}
}
