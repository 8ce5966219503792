package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A tombstone is dated by the clock at its DELETE, not by the deleting transaction's
// start: a red-team pass purged, with a retention of 2 s, the tombstone of a DELETE
// committed a moment before by a transaction that had been open for 3 s, and a stale
// holder's INSERT of the key was accepted.
func TestTombstoneDatedAtDelete(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO acc (id) VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the transaction works before it deletes
	if _, err := tx.ExecContext(ctx, "DELETE FROM acc WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := schema.PurgeTombstones(ctx, raw, postgres.Dialect, time.Second, "acc"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (id) VALUES (7)")
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT after a purge with a retention shorter than the deleter's transaction: err = %v, want ErrFenced (the tombstone dated at the DELETE survives)", err)
	}
}

// Keys the tombstone must compare as the table's primary key does (red-team findings):
// a citext key ('alice' is 'Alice'), whose = lives outside pg_catalog, and a primary
// key with INCLUDE columns, which are not the key. A key deleted under token 10 is
// not re-inserted under token 5 in another spelling or with other included values.
func TestTombstoneKeyAsTheIndex(t *testing.T) {
	for _, c := range []struct {
		name, ddl, first, second string
	}{
		{"citext", "CREATE TABLE acc (name citext PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
			"INSERT INTO acc (name) VALUES ('Alice')", "INSERT INTO acc (name) VALUES ('alice')"},
		{"include", "CREATE TABLE acc (id bigint, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0, PRIMARY KEY (id) INCLUDE (balance))",
			"INSERT INTO acc (id, balance) VALUES (7, 1)", "INSERT INTO acc (id, balance) VALUES (7, 666)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx := context.Background()
			raw := rawWith(t, dsn, "CREATE EXTENSION IF NOT EXISTS citext", c.ddl)
			checkAcc(t, raw, dsn)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), c.first); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM acc"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), c.second); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("%s after %s was deleted under token 10, under token 5: err = %v, want ErrFenced", c.second, c.first, err)
			}
		})
	}
}

// An inheritance child keyed on its own column shares its parent's tombstones, keyed on
// the parent's key: a red-team pass re-inserted a child row deleted under token 10
// under token 5 with another id. A child keyed like its parent shares no unique index
// with it: a later pass had a stale INSERT into the parent race past a concurrent
// DELETE of the key in the child, without waiting.
// schema.Check reports both.
func TestTombstoneChildWithOtherKey(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE TABLE acc_same () INHERITS (acc)", "ALTER TABLE acc_same ADD PRIMARY KEY (id)",
		"CREATE TABLE acc_child (name text PRIMARY KEY) INHERITS (acc)")
	check := func() string { return checkAcc(t, raw, dsn) }
	check()
	problems := check()
	if !strings.Contains(problems, "public.acc_child") || !strings.Contains(problems, "keyed on (name)") {
		t.Fatalf("problems %q, want acc_child's key reported", problems)
	}
	if !strings.Contains(problems, "public.acc_same") || !strings.Contains(problems, "no unique key across an inheritance hierarchy") {
		t.Fatalf("problems %q: want acc_same, keyed like its parent, reported", problems)
	}
}

// A trigger on another table whose function writes the guarded table under an escaped
// name (U&"\0061cc") is a side door like any: a red-team pass found it neither reported
// nor refused (the catalog prefilter looked for the plain name).
func TestTriggerDoorEscapedName(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE TABLE jobs (id bigint PRIMARY KEY)",
		`CREATE FUNCTION jobs_apply() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE U&"\0061cc" SET balance = 777, version = version + 1 WHERE id = NEW.id; RETURN NULL; END $$`,
		"CREATE TRIGGER jobs_apply AFTER INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION jobs_apply()")
	if p := checkAcc(t, raw, dsn); !strings.Contains(p, "jobs_apply") {
		t.Fatalf("problems %q, want the trigger jobs_apply reported", p)
	}
}

// A foreign table whose remote table is named like the guarded table is reported: a
// red-team pass wrote the guarded table under a stale token through a postgres_fdw
// loopback foreign table created outside the wrapper.
func TestForeignTableDoor(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE EXTENSION IF NOT EXISTS postgres_fdw",
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname 'x')",
		"CREATE FOREIGN TABLE facc (id bigint, balance bigint, fence_token bigint, version bigint) SERVER loop OPTIONS (table_name 'acc')")
	check := func() string { return checkAcc(t, raw, dsn) }
	if p := check(); !strings.Contains(p, "foreign table public.facc") {
		t.Fatalf("problems %q, want the foreign table reported", p)
	}
	if p := check(); strings.Contains(p, "facc") {
		t.Fatalf("after the fix: %q", p)
	}
}

// checkAcc runs schema.Check on acc through raw, applies every fix through a plain
// accReport runs schema.Check on acc: its problems and its Fix.
func accReport(t *testing.T, raw *sql.DB) (problems, fix []string) {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		problems = append(problems, r.Problems...)
		fix = append(fix, r.Fix...)
	}
	return problems, fix
}

// connection on dsn, and returns the problems it reported.
func checkAcc(t *testing.T, raw *sql.DB, dsn string) string {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		rawWith(t, dsn, r.Fix...)
	}
	return strings.Join(reps[0].Problems, "\n")
}

// Over-refusal. tombstoneKey names the tombstone table with tombTable(fold(t.Table)),
// whose schema is "public" when the table is unqualified — but the lazy check passes
// the table as the DSN names it, and to_regclass resolves it through the session's
// search_path. A pool with search_path=app and fenced_tables=acc over app.acc (text
// key) is compared with public.fencedsql_tomb_acc, the tombstone table of another
// table public.acc (bigint key): a false "tombstone key" door, and its Fix would ALTER
// public's tombstone table to text. (With no public.acc, app.acc's own drift goes
// unseen by the lazy check.) Right: resolve the table's schema first (as to_regclass
// does) and compare with that schema's tombstone table; the write is accepted.
func TestTombstoneKeyComparedInTablesOwnSchema(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE SCHEMA app",
		"CREATE TABLE app.acc (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		guardBodyAcc)
	for _, tbl := range []string{"app.acc", "public.acc"} {
		reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: tbl})
		if err != nil {
			t.Fatal(err)
		}
		rawWith(t, dsn, reps[0].Fix...)
		if reps, _ = schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: tbl}); !reps[0].OK() {
			t.Fatalf("setup %s: %q", tbl, reps[0].Problems)
		}
	}
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "search_path=app")+"&fenced_tables=acc")
	_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 10), "INSERT INTO acc (id, fence_token, version) VALUES ('k', 10, 1)")
	if err != nil {
		t.Fatalf("[over-refusal] pool with search_path=app over app.acc (guarded, schema.Check OK) refuses: %.400s; want the write accepted", err)
	}
}
