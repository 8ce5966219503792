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
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const rt20gAcc = "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"

// rt20gInstalled creates acc, installs the guard and the tombstones with schema.Check's
// fix, and checks that a second Check reports acc as fully guarded.
func rt20gInstalled(t *testing.T) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn, rt20gAcc)
	checkAcc(t, raw, dsn)
	if p := rt20gReport(t, raw); !p.OK() || !p.Guarded || !p.Tombstoned {
		t.Fatalf("after the fix: %+v", p)
	}
	return dsn, raw
}

func rt20gReport(t *testing.T, raw *sql.DB) schema.TableReport {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	return reps[0]
}

func rt20gExec(t *testing.T, raw *sql.DB, q string) error {
	t.Helper()
	_, err := raw.ExecContext(context.Background(), q)
	return err
}

// A table's own BEFORE UPDATE trigger that puts the old token back in place of the
// fencing NULL (NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token)) is the
// door ownTriggers exists to report, and the lazy check refuses a pool over it. But
// ownTriggers skips every trigger whose function's name starts with "fencedsql_"
// (p.proname NOT LIKE 'fencedsql\_%', in any schema), meant for the guard's own
// functions: the same trigger calling a function so named is neither reported by
// schema.Check nor refused by the lazy check. Named to fire before fencedsql_guard
// ("a_…"), it turns the wrapper's refused stale UPDATE into an accepted one, the row
// guard installed: the guard then sees the old token and an advanced version. Right:
// exclude only the guard's own functions (the table's fencedsql_guard_/tombstone_
// functions, by name and schema, or by the triggers GuardDDL/TombstoneDDL create), and
// report this trigger; the stale UPDATE fails with ErrFenced (or the pool with
// ErrSchema).
func TestRTrt20gOwnTriggerNamedLikeGuard(t *testing.T) {
	ctx := context.Background()
	dsn, raw := rt20gInstalled(t)
	for _, q := range []string{
		`CREATE FUNCTION public.fencedsql_keep_token() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token); RETURN NEW; END $$`,
		`CREATE TRIGGER a_keep BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION public.fencedsql_keep_token()`,
	} {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	r := rt20gReport(t, raw)
	if r.OK() {
		t.Fatalf("schema.Check reports OK; want the door reported")
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := rt20gExec(t, raw, "INSERT INTO acc (id, balance, fence_token, version) VALUES (7, 100, 20, 1)"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE acc SET balance = 666 WHERE id = 7")
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM acc WHERE id = 7").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if bal == 666 {
		t.Fatalf("a stale UPDATE (token 5) of a row written under token 20 went through the fenced pool (err = %v; row now balance %d, token %d) past a BEFORE trigger whose function is named fencedsql_…; schema.Check: OK=%v %q; want the trigger reported and the write refused (ErrFenced or ErrSchema)", err, bal, tok, r.OK(), r.Problems)
	}
}

// An updatable view over the guarded table counts as closed when it carries an
// INSTEAD OF trigger named fencedsql_refuse calling a function named
// fencedsql_refuse_write — in any schema, with any body. And a trigger on another
// relation whose function writes the table (otherTriggers) is skipped when that
// function's name starts with fencedsql_. So a view whose "refusing" trigger in fact
// performs the write unfenced (keeping the row's token, advancing the version: the
// row guard accepts it) is reported by neither check, the lazy check lets the fenced
// pool use it, and a stale holder (token 5) changes a row written under token 20
// through the view. Right: the view check requires the function GuardDDL-style
// fencedsql_refuse_write of this package (its body, in the view's schema — as the
// Fix creates it), and otherTriggers excludes only the guard's own functions; the
// write through the view is refused (ErrSchema for the pool, or the FNCD1 refusal).
func TestRTrt20gViewRefuseTriggerImpostor(t *testing.T) {
	ctx := context.Background()
	dsn, raw := rt20gInstalled(t)
	for _, q := range []string{
		"CREATE VIEW accv AS SELECT * FROM acc",
		`CREATE FUNCTION public.fencedsql_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE acc SET balance = NEW.balance, version = version + 1 WHERE id = OLD.id; RETURN NEW; END $$`,
		"CREATE TRIGGER fencedsql_refuse INSTEAD OF INSERT OR UPDATE OR DELETE ON accv FOR EACH ROW EXECUTE FUNCTION public.fencedsql_refuse_write()",
	} {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	r := rt20gReport(t, raw)
	if r.OK() {
		t.Fatalf("schema.Check reports OK; want the view and its trigger reported")
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := rt20gExec(t, raw, "INSERT INTO acc (id, balance, fence_token, version) VALUES (7, 100, 20, 1)"); err != nil {
		t.Fatal(err)
	}
	// The pool's first statement on the table runs the lazy check, which must find the
	// door and refuse.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE acc SET balance = 1 WHERE id = 7"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("fenced UPDATE of acc: err = %v, want ErrSchema naming the view", err)
	}
	// Check's Fix restores the refusing function (and the view's trigger), after
	// which a write through the view is refused, and the check is clean.
	for _, q := range r.Fix {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatalf("fix %q: %v", q, err)
		}
	}
	if r := rt20gReport(t, raw); !r.OK() {
		t.Fatalf("after the Fix, Check: %q", r.Problems)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accv SET balance = 666 WHERE id = 7")
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM acc WHERE id = 7").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if err == nil || bal != 100 {
		t.Fatalf("write through the view after the Fix: err = %v, row balance %d token %d; want it refused, the row unchanged", err, bal, tok)
	}
}

type rt20gCase struct {
	name    string
	weaken  []string
	effect  []string // statements that the intact guard refuses
	tomb    bool     // the weakening is of the tombstone guard (else of the row guard)
	comment string
}

func rt20gRun(t *testing.T, c rt20gCase) {
	t.Helper()
	_, raw := rt20gInstalled(t)
	if err := rt20gExec(t, raw, "INSERT INTO acc (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range c.weaken {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var through []string
	for _, q := range c.effect {
		if err := rt20gExec(t, raw, q); err == nil {
			through = append(through, q)
		}
	}
	r := rt20gReport(t, raw)
	flag := r.Guarded
	if c.tomb {
		flag = r.Tombstoned
	}
	if flag && r.OK() {
		t.Fatalf("%s: schema.Check still reports acc as guarded (Guarded=%v Tombstoned=%v, no problem) while the weakened guard let through %q; want the guard reported as not installed (and its Fix to restore it)", c.comment, r.Guarded, r.Tombstoned, through)
	}
	for _, q := range r.Fix {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatalf("fix %q: %v", q, err)
		}
	}
	if r := rt20gReport(t, raw); !r.OK() || !r.Guarded || !r.Tombstoned {
		t.Fatalf("%s: after the Fix: %q", c.comment, r.Problems)
	}
}

func TestRTrt20gGuardTriggerWhenFalse(t *testing.T) {
	rt20gRun(t, rt20gCase{
		weaken: []string{
			"DROP TRIGGER fencedsql_guard ON acc",
			"CREATE TRIGGER fencedsql_guard BEFORE INSERT OR UPDATE ON acc FOR EACH ROW WHEN (false) EXECUTE FUNCTION fencedsql_guard_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_guard",
		},
		effect:  []string{"UPDATE acc SET fence_token = 1, balance = 666 WHERE id = 1"},
		comment: "guard trigger WHEN (false)",
	})
}

func TestRTrt20gGuardTriggerUpdateOf(t *testing.T) {
	rt20gRun(t, rt20gCase{
		weaken: []string{
			"DROP TRIGGER fencedsql_guard ON acc",
			"CREATE TRIGGER fencedsql_guard BEFORE INSERT OR UPDATE OF id ON acc FOR EACH ROW EXECUTE FUNCTION fencedsql_guard_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_guard",
		},
		effect:  []string{"UPDATE acc SET fence_token = 1, balance = 666 WHERE id = 1"},
		comment: "guard trigger UPDATE OF id",
	})
}

func TestRTrt20gTruncateTriggerOtherEvent(t *testing.T) {
	rt20gRun(t, rt20gCase{
		weaken: []string{
			"DROP TRIGGER fencedsql_guard_truncate ON acc",
			"CREATE TRIGGER fencedsql_guard_truncate AFTER UPDATE ON acc FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION fencedsql_guard_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_guard_truncate",
		},
		effect:  []string{"TRUNCATE acc", "INSERT INTO acc (id, fence_token, version) VALUES (1, 1, 1)"},
		comment: "TRUNCATE trigger on another event",
	})
}

func TestRTrt20gTombstoneInsertWhenFalse(t *testing.T) {
	rt20gRun(t, rt20gCase{
		tomb: true,
		weaken: []string{
			"DROP TRIGGER fencedsql_tombstone_insert ON acc",
			"CREATE TRIGGER fencedsql_tombstone_insert AFTER INSERT ON acc FOR EACH ROW WHEN (false) EXECUTE FUNCTION fencedsql_tombstone_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_tombstone_insert",
		},
		effect: []string{
			"BEGIN; UPDATE acc SET fence_token = 20, version = version + 1 WHERE id = 2; DELETE FROM acc WHERE id = 2; COMMIT",
			"INSERT INTO acc (id, fence_token, version) VALUES (2, 5, 1)",
		},
		comment: "tombstone INSERT trigger WHEN (false)",
	})
}

func TestRTrt20gTombstoneDeleteOtherEvent(t *testing.T) {
	rt20gRun(t, rt20gCase{
		tomb: true,
		weaken: []string{
			"DROP TRIGGER fencedsql_tombstone_delete ON acc",
			"CREATE TRIGGER fencedsql_tombstone_delete AFTER UPDATE ON acc FOR EACH ROW WHEN (false) EXECUTE FUNCTION fencedsql_tombstone_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_tombstone_delete",
		},
		effect: []string{
			"BEGIN; UPDATE acc SET fence_token = 20, version = version + 1 WHERE id = 2; DELETE FROM acc WHERE id = 2; COMMIT",
			"INSERT INTO acc (id, fence_token, version) VALUES (2, 5, 1)",
		},
		comment: "tombstone DELETE trigger on another event",
	})
}

// The primary key's type changed after the tombstones were installed (text to citext:
// user names made case-insensitive, a common migration), done as the package doc says
// ("after changing the key … re-install"): the tombstone triggers dropped
// (UntombstoneDDL; their WHEN clause names the column, so PostgreSQL refuses the ALTER
// before), the type changed, schema.Check's Fix applied. The Fix's CREATE TABLE IF NOT
// EXISTS keeps the old tombstone table (name text) while the new function compares
// with citext's =, so every INSERT into acc now fails with the server's untyped
// "operator does not exist: text public.= public.citext" — and schema.Check reports
// everything installed and OK. (UntombstoneDDL keeps the tombstone table on
// PostgreSQL, unlike MySQL/SQLite.) Right: Check compares the tombstone table's key
// columns (types, collations) with the table's primary key and reports a difference,
// with a Fix that rebuilds the tombstone table carrying its tombstones over; a fenced
// INSERT of a new key then succeeds (and 'alice' after 'Alice' was deleted under a
// newer token fails with ErrFenced). Severity: over-refusal (fail closed) with an
// untyped error and a green check.
func TestRTrt20gTombstoneKeyTypeChanged(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE EXTENSION IF NOT EXISTS citext",
		"CREATE TABLE acc (name text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	for _, q := range postgres.Dialect.(dialect.Tombstoner).UntombstoneDDL(dialect.TableName{Schema: "public", Name: "acc"}) {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt20gExec(t, raw, "ALTER TABLE acc ALTER COLUMN name TYPE citext"); err != nil {
		t.Fatal(err)
	}
	if p := checkAcc(t, raw, dsn); !strings.Contains(p, "tombstone table") {
		t.Fatalf("schema.Check after the key's type changed: %q; want the tombstone table's key reported (and fixed by the Fix applied)", p)
	}
	r := rt20gReport(t, raw)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO acc (name) VALUES ('Alice')")
	if err != nil {
		t.Fatalf("after the key's type changed and schema.Check's Fix was applied (Check now: OK=%v Tombstoned=%v %q), a fenced INSERT of a new key fails: %v; want it to succeed (or Check to report the tombstone table's stale key)", r.OK(), r.Tombstoned, r.Problems, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM acc WHERE name = 'Alice'"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (name) VALUES ('alice')"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT of 'alice' after 'Alice' was deleted under token 10: err = %v, want ErrFenced", err)
	}
}

// The same migration with bigint to numeric fails open: the Fix keeps the tombstone
// table's id bigint, so the DELETE of key 1.5 records a tombstone for 2 (the
// assignment cast rounds), and a stale INSERT of 1.5 (token 5) after a newer holder
// (token 10) deleted it matches no tombstone and is accepted, while schema.Check
// reports the tombstone guard installed and OK. Right: as above — Check compares the
// tombstone table's key with the primary key and rebuilds it; the stale INSERT fails
// with ErrFenced.
func TestRTrt20gTombstoneKeyNumericRounds(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, rt20gAcc)
	checkAcc(t, raw, dsn)
	for _, q := range postgres.Dialect.(dialect.Tombstoner).UntombstoneDDL(dialect.TableName{Schema: "public", Name: "acc"}) {
		if err := rt20gExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt20gExec(t, raw, "ALTER TABLE acc ALTER COLUMN id TYPE numeric"); err != nil {
		t.Fatal(err)
	}
	if p := checkAcc(t, raw, dsn); !strings.Contains(p, "tombstone table") {
		t.Fatalf("schema.Check after the key's type changed: %q; want the tombstone table's key reported (and fixed by the Fix applied)", p)
	}
	r := rt20gReport(t, raw)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO acc (id) VALUES (1.5)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM acc WHERE id = 1.5"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (id) VALUES (1.5)")
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("after id became numeric (tombstones re-installed by Check's Fix; Check now OK=%v Tombstoned=%v %q), a stale INSERT of key 1.5 (token 5) after it was deleted under token 10: err = %v; want ErrFenced", r.OK(), r.Tombstoned, r.Problems, err)
	}
}
