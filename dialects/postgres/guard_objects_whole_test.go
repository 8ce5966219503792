package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Guard objects are judged by their whole definition, not by name and marker
// (red-team rt45b F1–F4, guardobjects.go): each test tampers with one object on a
// plain connection as its owner, keeping what the installed-queries look for, and
// wants schema.Check to report it, a pool opened afterwards (whose lazy check runs
// after the tamper) to refuse the stale write, and the Fix to restore the guard.

// wholeAcc: acc guarded with tombstones; row 5 under token 40 (the stale holder's
// own), key 20 written and deleted under 70 (its tombstone holds 70); then extra.
func wholeAcc(t *testing.T, extra ...string) (raw *sql.DB, dsn string) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	rawWith(t, dsn, "INSERT INTO acc (id, fence_token) VALUES (5, 40), (20, 70)")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 70), "DELETE FROM acc WHERE id = 20"); err != nil {
		t.Fatal(err)
	}
	rawWith(t, dsn, extra...)
	return raw, dsn
}

// wholeRestored applies the Fix and wants no problem left.
func wholeRestored(t *testing.T, raw *sql.DB, dsn string, fix []string) {
	t.Helper()
	if len(fix) == 0 {
		t.Fatal("the report has no Fix")
	}
	rawWith(t, dsn, fix...)
	if probs, _ := accReport(t, raw); len(probs) != 0 {
		t.Fatalf("after the Fix: %q", probs)
	}
}

// wholeRetrigger re-creates the trigger name on acc from its pg_get_triggerdef text
// with its WHEN condition changed by when (the old condition in, the new one out),
// ENABLE ALWAYS.
func wholeRetrigger(t *testing.T, raw *sql.DB, dsn, name string, when func(string) string) {
	t.Helper()
	var def string
	if err := raw.QueryRow("SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = $1 AND tgrelid = 'acc'::regclass", name).Scan(&def); err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(def, " WHEN ("), strings.LastIndex(def, " EXECUTE ")
	if i < 0 {
		t.Fatalf("%s has no WHEN: %s", name, def)
	}
	newDef := def[:i] + " WHEN (" + when(def[i+len(" WHEN "):j]) + ")" + def[j:]
	rawWith(t, dsn, "DROP TRIGGER "+name+" ON acc", newDef, "ALTER TABLE acc ENABLE ALWAYS TRIGGER "+name)
}

// F1: the tombstone guard's rekey trigger with a WHEN clause that never holds.
func TestTombstoneRekeyTriggerJudgedByItsWhenClause(t *testing.T) {
	for name, when := range map[string]func(string) string{
		"AndFalse": func(w string) string { return w + " AND false" },
		"False":    func(string) string { return "false" },
		"OldOld":   func(string) string { return "old.id IS DISTINCT FROM old.id" },
	} {
		t.Run(name, func(t *testing.T) {
			raw, dsn := wholeAcc(t)
			wholeRetrigger(t, raw, dsn, "fencedsql_tombstone_rekey", when)
			probs, fix := accReport(t, raw)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 40), "UPDATE acc SET id = 20 WHERE id = 5")
			if tok, bad := wholeResurrected(t, raw); bad || len(probs) == 0 {
				t.Fatalf("schema.Check problems %q; stale UPDATE … SET id = 20 under 40: %v, row 20 token %d (key deleted under 70)", probs, err, tok)
			}
			wholeRestored(t, raw, dsn, fix)
		})
	}
}

// F2: the guard's DELETE trigger with " AND false" added to its WHEN clause: a stale
// holder's cascade from a table the pool does not guard deleted a row written under
// a newer token. The cascade's DELETE of the unguarded parent runs no lazy check (it
// names no guarded table): schema.Check reports the trigger, a pool's next guarded
// write refuses the table, and after the Fix the cascade is refused again.
func TestGuardDeleteTriggerJudgedByItsWhenClause(t *testing.T) {
	raw, dsn := wholeAcc(t,
		"CREATE TABLE whole_parent (id bigint PRIMARY KEY)",
		"INSERT INTO whole_parent VALUES (1)",
		"ALTER TABLE acc ADD COLUMN pid bigint REFERENCES whole_parent ON DELETE CASCADE",
		"INSERT INTO acc (id, fence_token, pid) VALUES (30, 70, 1)")
	wholeRetrigger(t, raw, dsn, "fencedsql_guard_delete", func(w string) string { return w + " AND false" })
	probs, fix := accReport(t, raw)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 40), "UPDATE acc SET balance = 1 WHERE id = 5")
	if len(probs) == 0 || !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("schema.Check problems %q; a guarded write through a pool opened after it: %v, want ErrSchema", probs, err)
	}
	wholeRestored(t, raw, dsn, fix)
	_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 40), "DELETE FROM whole_parent WHERE id = 1")
	var n int
	if qerr := raw.QueryRow("SELECT count(*) FROM acc WHERE id = 30").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if n != 1 {
		t.Fatalf("after the Fix, stale cascade DELETE under 40: %v, row 30 (token 70) left %d", err, n)
	}
}

// F3: the tombstone function replaced by a no-op keeping the marker, SECURITY
// DEFINER and the pinned search_path.
func TestTombstoneFunctionJudgedWhole(t *testing.T) {
	raw, dsn := wholeAcc(t,
		`CREATE OR REPLACE FUNCTION public.fencedsql_tombstone_acc() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
-- fencedsql tombstone guard v9
BEGIN RETURN NULL; END $f$`)
	probs, fix := accReport(t, raw)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 40), "INSERT INTO acc (id) VALUES (20)")
	if tok, bad := wholeResurrected(t, raw); bad || len(probs) == 0 {
		t.Fatalf("schema.Check problems %q; stale INSERT of key 20 under 40: %v, row 20 token %d (deleted under 70)", probs, err, tok)
	}
	wholeRestored(t, raw, dsn, fix)
}

// F4: the absence recorder replaced by one that records nothing (keeping a marker and
// SECURITY DEFINER), or re-created with its exact text but without the pinned
// search_path (its operators would then resolve through the caller's).
func TestAbsenceRecorderJudgedWhole(t *testing.T) {
	for name, tamper := range map[string]func(raw *sql.DB) string{
		"NoOp": func(*sql.DB) string {
			return `CREATE OR REPLACE FUNCTION public.fencedsql_tombclaim_acc(bigint, bigint, boolean) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $f$
-- fencedsql absence recorder v3
BEGIN RETURN 1; END $f$`
		},
		"NoSearchPath": func(raw *sql.DB) string {
			var src string
			if err := raw.QueryRow("SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_tombclaim_acc'").Scan(&src); err != nil {
				t.Fatal(err)
			}
			return "CREATE OR REPLACE FUNCTION public.fencedsql_tombclaim_acc(bigint, bigint, boolean) RETURNS integer LANGUAGE plpgsql SECURITY DEFINER AS $fx$" + src + "$fx$"
		},
	} {
		t.Run(name, func(t *testing.T) {
			raw, dsn := wholeAcc(t)
			rawWith(t, dsn, tamper(raw))
			probs, fix := accReport(t, raw)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			ctx := fencedsql.WithToken(context.Background(), 60)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			cerr := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 7).Scan(&id)
			_ = tx.Commit()
			ierr := insertAs(db, 40, "INSERT INTO acc (id) VALUES (7)")
			var tok int64
			qerr := raw.QueryRow("SELECT fence_token FROM acc WHERE id = 7").Scan(&tok)
			if qerr == nil && errors.Is(cerr, sql.ErrNoRows) || len(probs) == 0 {
				t.Fatalf("schema.Check problems %q; claim of 7 under 60: %v; INSERT of 7 under 40 after it: %v (row token %d, %v)", probs, cerr, ierr, tok, qerr)
			}
			wholeRestored(t, raw, dsn, fix)
		})
	}
}

// The whole-definition comparison accepts what the installer writes, for keys whose
// WHEN clause PostgreSQL prints with casts (varchar compares as text), quoted and
// several columns, in another schema, and for an int4 token column.
func TestGuardObjectsAsInstalledAreAccepted(t *testing.T) {
	for name, ddl := range map[string][]string{
		"VarcharKey": {`CREATE TABLE acc (id varchar(12) PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`},
		"QuotedPair": {`CREATE TABLE acc ("K y" text, "user" integer, "Z" character(3), balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, PRIMARY KEY ("user", "K y", "Z"))`},
		"Int4Token":  {`CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token integer NOT NULL DEFAULT 0, version integer NOT NULL DEFAULT 0)`},
	} {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn, ddl...)
			checkAcc(t, raw, dsn)
			if probs, _ := accReport(t, raw); len(probs) != 0 {
				t.Fatalf("as installed: %q", probs)
			}
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), "DELETE FROM acc"); err != nil {
				t.Fatalf("lazy check over the installed guard: %v", err)
			}
		})
	}
}

func wholeResurrected(t *testing.T, raw *sql.DB) (int64, bool) {
	t.Helper()
	var tok int64
	err := raw.QueryRow("SELECT fence_token FROM acc WHERE id = 20").Scan(&tok)
	if err == sql.ErrNoRows {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return tok, tok < 70
}
