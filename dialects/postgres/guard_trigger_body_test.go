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

const guardBodyAcc = "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"

// guardBodyInstalled creates acc, installs the guard and the tombstones with schema.Check's
// fix, and checks that a second Check reports acc as fully guarded.
func guardBodyInstalled(t *testing.T) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn, guardBodyAcc)
	checkAcc(t, raw, dsn)
	if p := guardBodyReport(t, raw); !p.OK() || !p.Guarded || !p.Tombstoned {
		t.Fatalf("after the fix: %+v", p)
	}
	return dsn, raw
}

func guardBodyReport(t *testing.T, raw *sql.DB) schema.TableReport {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	return reps[0]
}

func guardBodyExec(t *testing.T, raw *sql.DB, q string) error {
	t.Helper()
	_, err := raw.ExecContext(context.Background(), q)
	return err
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
func TestViewRefuseTriggerImpostorReported(t *testing.T) {
	ctx := context.Background()
	dsn, raw := guardBodyInstalled(t)
	for _, q := range []string{
		"CREATE VIEW accv AS SELECT * FROM acc",
		`CREATE FUNCTION public.fencedsql_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE acc SET balance = NEW.balance, version = version + 1 WHERE id = OLD.id; RETURN NEW; END $$`,
		"CREATE TRIGGER fencedsql_refuse INSTEAD OF INSERT OR UPDATE OR DELETE ON accv FOR EACH ROW EXECUTE FUNCTION public.fencedsql_refuse_write()",
	} {
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	r := guardBodyReport(t, raw)
	if r.OK() {
		t.Fatalf("schema.Check reports OK; want the view and its trigger reported")
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if err := guardBodyExec(t, raw, "INSERT INTO acc (id, balance, fence_token, version) VALUES (7, 100, 20, 1)"); err != nil {
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
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatalf("fix %q: %v", q, err)
		}
	}
	if r := guardBodyReport(t, raw); !r.OK() {
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

type guardBodyCase struct {
	name    string
	weaken  []string
	effect  []string // statements that the intact guard refuses
	tomb    bool     // the weakening is of the tombstone guard (else of the row guard)
	comment string
}

func guardBodyRun(t *testing.T, c guardBodyCase) {
	t.Helper()
	_, raw := guardBodyInstalled(t)
	if err := guardBodyExec(t, raw, "INSERT INTO acc (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range c.weaken {
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var through []string
	for _, q := range c.effect {
		if err := guardBodyExec(t, raw, q); err == nil {
			through = append(through, q)
		}
	}
	r := guardBodyReport(t, raw)
	flag := r.Guarded
	if c.tomb {
		flag = r.Tombstoned
	}
	if flag && r.OK() {
		t.Fatalf("%s: schema.Check still reports acc as guarded (Guarded=%v Tombstoned=%v, no problem) while the weakened guard let through %q; want the guard reported as not installed (and its Fix to restore it)", c.comment, r.Guarded, r.Tombstoned, through)
	}
	for _, q := range r.Fix {
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatalf("fix %q: %v", q, err)
		}
	}
	if r := guardBodyReport(t, raw); !r.OK() || !r.Guarded || !r.Tombstoned {
		t.Fatalf("%s: after the Fix: %q", c.comment, r.Problems)
	}
}

func TestCheckReportsGuardTriggerWhenFalse(t *testing.T) {
	guardBodyRun(t, guardBodyCase{
		weaken: []string{
			"DROP TRIGGER fencedsql_guard ON acc",
			"CREATE TRIGGER fencedsql_guard BEFORE INSERT OR UPDATE ON acc FOR EACH ROW WHEN (false) EXECUTE FUNCTION fencedsql_guard_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_guard",
		},
		effect:  []string{"UPDATE acc SET fence_token = 1, balance = 666 WHERE id = 1"},
		comment: "guard trigger WHEN (false)",
	})
}

func TestCheckReportsGuardTriggerUpdateOf(t *testing.T) {
	guardBodyRun(t, guardBodyCase{
		weaken: []string{
			"DROP TRIGGER fencedsql_guard ON acc",
			"CREATE TRIGGER fencedsql_guard BEFORE INSERT OR UPDATE OF id ON acc FOR EACH ROW EXECUTE FUNCTION fencedsql_guard_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_guard",
		},
		effect:  []string{"UPDATE acc SET fence_token = 1, balance = 666 WHERE id = 1"},
		comment: "guard trigger UPDATE OF id",
	})
}

func TestCheckReportsTruncateTriggerOtherEvent(t *testing.T) {
	guardBodyRun(t, guardBodyCase{
		weaken: []string{
			"DROP TRIGGER fencedsql_guard_truncate ON acc",
			"CREATE TRIGGER fencedsql_guard_truncate AFTER UPDATE ON acc FOR EACH STATEMENT WHEN (false) EXECUTE FUNCTION fencedsql_guard_acc()",
			"ALTER TABLE acc ENABLE ALWAYS TRIGGER fencedsql_guard_truncate",
		},
		effect:  []string{"TRUNCATE acc", "INSERT INTO acc (id, fence_token, version) VALUES (1, 1, 1)"},
		comment: "TRUNCATE trigger on another event",
	})
}

func TestCheckReportsTombstoneInsertWhenFalse(t *testing.T) {
	guardBodyRun(t, guardBodyCase{
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

func TestCheckReportsTombstoneDeleteOtherEvent(t *testing.T) {
	guardBodyRun(t, guardBodyCase{
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
func TestTombstoneKeyTypeChangeRebuiltByFix(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE EXTENSION IF NOT EXISTS citext",
		"CREATE TABLE acc (name text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	for _, q := range postgres.Dialect.(dialect.Tombstoner).UntombstoneDDL(dialect.TableName{Schema: "public", Name: "acc"}) {
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := guardBodyExec(t, raw, "ALTER TABLE acc ALTER COLUMN name TYPE citext"); err != nil {
		t.Fatal(err)
	}
	if p := checkAcc(t, raw, dsn); !strings.Contains(p, "tombstone table") {
		t.Fatalf("schema.Check after the key's type changed: %q; want the tombstone table's key reported (and fixed by the Fix applied)", p)
	}
	r := guardBodyReport(t, raw)
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
func TestTombstoneKeyNumericChangeRebuiltByFix(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardBodyAcc)
	checkAcc(t, raw, dsn)
	for _, q := range postgres.Dialect.(dialect.Tombstoner).UntombstoneDDL(dialect.TableName{Schema: "public", Name: "acc"}) {
		if err := guardBodyExec(t, raw, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := guardBodyExec(t, raw, "ALTER TABLE acc ALTER COLUMN id TYPE numeric"); err != nil {
		t.Fatal(err)
	}
	if p := checkAcc(t, raw, dsn); !strings.Contains(p, "tombstone table") {
		t.Fatalf("schema.Check after the key's type changed: %q; want the tombstone table's key reported (and fixed by the Fix applied)", p)
	}
	r := guardBodyReport(t, raw)
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
