package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// ownTriggerDoorObjects returns the objects of the own-trigger doors schema.Check
// reports on spec's table, failing unless each has one DROP TRIGGER fix.
func ownTriggerDoorObjects(t *testing.T, raw *sql.DB, spec schema.GuardSpec) []string {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorOwnTrigger {
			objs = append(objs, sd.Object)
			if strings.Contains(sd.Problem, "other than NEW") { // skipDoor's: the user's trigger, no Fix
				if sd.Note || len(sd.Fix) != 0 {
					t.Errorf("door %s: note %v, fix %q", sd.Object, sd.Note, sd.Fix)
				}
				continue
			}
			if sd.Note || len(sd.Fix) != 1 || !strings.HasPrefix(sd.Fix[0], "DROP TRIGGER IF EXISTS ") {
				t.Errorf("door %s: note %v, fix %q", sd.Object, sd.Note, sd.Fix)
			}
		}
	}
	return objs
}

// The PostgreSQL form of the "PATCH" trigger (red-team "rtf" finding F2b, minimal
// set-up: no database-side guard, the lazy check is the safety net): the table's own
// BEFORE UPDATE trigger names the token only in its WHEN clause, and its function
// writes the row itself and skips the original change (RETURN NULL), naming no
// fencing column. It stored a stale holder's value with no error. Now a fresh pool
// refuses the table with ErrSchema (nothing written) and schema.Check reports it with
// DROP TRIGGER; a BEFORE trigger that sets an unrelated column and an AFTER trigger
// that logs the token are no door. After the fix the stale write is fenced and a
// current one passes.
func TestOwnTriggerPatchRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, updated_at timestamptz)",
		"CREATE TABLE audit (id bigint, tok bigint)",
		"INSERT INTO accounts VALUES (1, 600, 60, 1)",
		`CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := now(); RETURN NEW; END $$`,
		"CREATE TRIGGER acc_touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch()",
		`CREATE FUNCTION log_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (NEW.id, NEW.fence_token); RETURN NULL; END $$`,
		"CREATE TRIGGER acc_log AFTER UPDATE ON accounts FOR EACH ROW WHEN (NEW.fence_token IS NOT NULL) EXECUTE FUNCTION log_row()")
	spec := schema.GuardSpec{Table: "accounts"}
	if objs := ownTriggerDoorObjects(t, raw, spec); len(objs) != 0 {
		t.Fatalf("no-door triggers reported: %q", objs)
	}
	rawWith(t, dsn,
		`CREATE FUNCTION keep_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE accounts SET balance = NEW.balance WHERE id = OLD.id;
  RETURN NULL;
END $$`,
		"CREATE TRIGGER accounts_patch BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.fence_token IS NULL) EXECUTE FUNCTION keep_row()")
	open := func() *sql.DB {
		db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
		return db
	}
	for _, tok := range []uint64{10, 61} { // stale, then current: the table is refused
		_, err := open().ExecContext(fencedsql.WithToken(ctx, tok), "UPDATE accounts SET balance = -1 WHERE id = 1")
		if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "accounts_patch") || !strings.Contains(err.Error(), "DROP TRIGGER") ||
			strings.Contains(err.Error(), "acc_touch") || strings.Contains(err.Error(), "acc_log") {
			t.Fatalf("UPDATE under token %d with the PATCH trigger: %v, want ErrSchema naming accounts_patch only", tok, err)
		}
	}
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil || bal != 600 || tok != 60 {
		t.Fatalf("row 1 = balance %d token %d (%v) after refused writes", bal, tok, err)
	}
	if got, want := strings.Join(ownTriggerDoorObjects(t, raw, spec), ","), "accounts_patch on public.accounts"; got != want {
		t.Fatalf("own trigger doors %q, want %q", got, want)
	}
	rawWith(t, dsn, "DROP TRIGGER accounts_patch ON accounts")
	if objs := ownTriggerDoorObjects(t, raw, spec); len(objs) != 0 {
		t.Fatalf("after the fix: %q", objs)
	}
	db := open()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE after the fix: %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 61), "UPDATE accounts SET balance = 610 WHERE id = 1"); err != nil {
		t.Fatalf("current UPDATE after the fix: %v", err)
	}
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil || bal != 610 || tok != 61 {
		t.Fatalf("row 1 = balance %d token %d (%v) after the current write", bal, tok, err)
	}
}

// Which own BEFORE row triggers the WHEN-clause and self-write rules judge: a WHEN
// naming a fencing column (in any case and quoting) with a function that only skips
// the row, and a function that writes the table itself without a WHEN, are doors (once
// each; a trigger whose body names a column is ownTriggers' and reported once); a WHEN
// on another column, an AFTER trigger writing the table and a DELETE trigger are not
// (the WHEN on another column is skipDoor's door, red-team rt35a: its function may
// return NULL; TestSkipTriggerReported).
func TestOwnTriggerWhenAndSelfWrite(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		`CREATE FUNCTION skip_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`,
		`CREATE FUNCTION write_self() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE public."ACCOUNTS" SET balance = 0 WHERE false; UPDATE "accounts" SET balance = NEW.balance WHERE id = OLD.id; RETURN NULL; END $$`,
		`CREATE FUNCTION both_ways() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = NEW.balance, version = OLD.version + 1 WHERE id = OLD.id; RETURN NULL; END $$`,
		// Doors.
		`CREATE TRIGGER d_when BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.VERSION IS NULL OR NEW.balance < 0) EXECUTE FUNCTION skip_row()`,
		"CREATE TRIGGER d_write BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION write_self()",
		"CREATE TRIGGER d_names BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.fence_token IS NULL) EXECUTE FUNCTION both_ways()",
		// skipDoor's door (not this test's rules): it may skip the row.
		"CREATE TRIGGER s_when BEFORE UPDATE ON accounts FOR EACH ROW WHEN (NEW.balance < -1000) EXECUTE FUNCTION skip_row()",
		// Not doors.
		"CREATE TRIGGER n_after AFTER UPDATE ON accounts FOR EACH ROW WHEN (NEW.fence_token > 100) EXECUTE FUNCTION write_self()",
		"CREATE TRIGGER n_delete BEFORE DELETE ON accounts FOR EACH ROW WHEN (OLD.fence_token > 100) EXECUTE FUNCTION write_self()")
	got := strings.Join(ownTriggerDoorObjects(t, raw, schema.GuardSpec{Table: "accounts"}), ",")
	if want := "d_names on public.accounts,d_when on public.accounts,d_write on public.accounts,s_when on public.accounts"; got != want {
		t.Fatalf("own trigger doors %q, want %q", got, want)
	}
}
