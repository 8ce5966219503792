package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// loopbackForeignTables makes, on raw, a postgres_fdw server that loops back to the
// database of dsn, a user mapping for the current user, and one foreign table per
// statement in tables (CREATE FOREIGN TABLE … SERVER loop …).
func loopbackForeignTables(t *testing.T, dsn string, raw *sql.DB, tables ...string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	testdb.Exec(t, raw,
		`CREATE EXTENSION IF NOT EXISTS postgres_fdw`,
		`CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '`+u.Hostname()+`', port '`+u.Port()+`', dbname '`+strings.TrimPrefix(u.Path, "/")+`')`,
		`CREATE USER MAPPING FOR CURRENT_USER SERVER loop OPTIONS (user '`+u.User.Username()+`', password '`+pw+`')`)
	testdb.Exec(t, raw, tables...)
}

// tombstoneKey2 writes key 2 of acc and deletes it through a fenced pool under
// token 50: its tombstone at 50.
func tombstoneKey2(t *testing.T, ctx context.Context, dsn string) {
	t.Helper()
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	defer db.Close()
	for _, q := range []string{`INSERT INTO acc (id, v) VALUES (2, 1)`, `DELETE FROM acc WHERE id = 2`} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// guardProblems runs schema.Check on table and returns its problems, joined.
func guardProblems(t *testing.T, ctx context.Context, raw *sql.DB, table string) string {
	t.Helper()
	reports, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, r := range reports {
		problems = append(problems, r.Problems...)
	}
	return strings.Join(problems, "\n")
}

// TestForeignTableOverTombstoneTableIsGuardDoor: a postgres_fdw foreign table over
// the tombstone table (a loopback server) let the fenced pool delete every tombstone,
// and a stale holder re-created a key deleted under token 50 under token 40 (red-team
// rt40a F3): a foreign table has no catalog dependency on its remote relation. Now it
// is judged by its options: schema.Check reports it as a guard-table door (Fix: DROP
// FOREIGN TABLE), the pool refuses writes to it (ErrUnsupported) — a remote name in
// upper case too — and the lazy check refuses the table's guarded writes (ErrSchema)
// while it exists. After the fix the pool writes again and the tombstone holds.
func TestForeignTableOverTombstoneTableIsGuardDoor(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE acc (id bigint PRIMARY KEY, v int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	tombstoneKey2(t, ctx, dsn)
	loopbackForeignTables(t, dsn, raw,
		`CREATE FOREIGN TABLE tomb_ft (id bigint, fence_token bigint, deleted_at timestamptz) SERVER loop OPTIONS (schema_name 'public', table_name 'fencedsql_tomb_acc')`,
		`CREATE FOREIGN TABLE tomb_ft_upper (id bigint, fence_token bigint, deleted_at timestamptz) SERVER loop OPTIONS (table_name 'FENCEDSQL_TOMB_ACC')`)
	p := guardProblems(t, ctx, raw, "acc")
	for _, ft := range []string{"public.tomb_ft ", "public.tomb_ft_upper "} {
		if !strings.Contains(p, "the foreign table "+ft) {
			t.Errorf("schema.Check does not report %s; problems:\n%s", ft, p)
		}
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	for _, q := range []string{`DELETE FROM tomb_ft`, `UPDATE tomb_ft SET fence_token = 0`, `DELETE FROM tomb_ft_upper`} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the fenced pool: %v; want ErrUnsupported", q, err)
		}
	}
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM fencedsql_tomb_acc`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("tombstones: %d (%v); want 1", n, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), `INSERT INTO acc (id, v) VALUES (1, 1)`); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("guarded INSERT with a foreign table over the tombstone table: %v; want ErrSchema", err)
	}

	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"}) // DROP FOREIGN TABLE
	if p := guardProblems(t, ctx, raw, "acc"); p != "" {
		t.Errorf("schema.Check after the fix:\n%s", p)
	}
	fresh := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 60), `INSERT INTO acc (id, v) VALUES (1, 1)`); err != nil {
		t.Errorf("guarded INSERT after the fix: %v", err)
	}
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 40), `INSERT INTO acc (id, v) VALUES (2, 9)`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT of the key deleted under token 50: %v; want ErrFenced", err)
	}
}

// TestForeignTableOverFloorIsGuardDoor: the same door over the token floor (red-team
// rt40a F3): with the floor at 45, UPDATE floor_ft SET floor = 0 through the fenced
// pool lowered it and token 40 wrote again. Now the foreign table — and a view over
// it — are reported, the writes through them refused (ErrUnsupported), and the floor
// stays 45.
func TestForeignTableOverFloorIsGuardDoor(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE acc (id bigint PRIMARY KEY, v int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	testdb.Exec(t, raw, `UPDATE fencedsql_floor SET floor = 45`)
	loopbackForeignTables(t, dsn, raw,
		`CREATE FOREIGN TABLE floor_ft (id int, floor bigint) SERVER loop OPTIONS (schema_name 'public', table_name 'fencedsql_floor')`,
		`CREATE VIEW floor_ft_view AS SELECT * FROM floor_ft`)
	if p := guardProblems(t, ctx, raw, "acc"); !strings.Contains(p, "the foreign table public.floor_ft ") || !strings.Contains(p, "the token floor") {
		t.Errorf("schema.Check does not report the foreign table over the floor; problems:\n%s", p)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	for _, q := range []string{`UPDATE floor_ft SET floor = 0`, `UPDATE floor_ft_view SET floor = 0`} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the fenced pool: %v; want ErrUnsupported", q, err)
		}
	}
	var floor int64
	if err := raw.QueryRowContext(ctx, `SELECT floor FROM fencedsql_floor`).Scan(&floor); err != nil || floor != 45 {
		t.Errorf("floor %d (%v); want 45", floor, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), `INSERT INTO acc (id, v) VALUES (1, 1)`); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("guarded INSERT with a foreign table over the floor: %v; want ErrSchema", err)
	}
}

// TestViewOverTombstoneTableWriteRefused: a view over the tombstone table was already
// a guard-table door (rt29a F4: the lazy check refuses the table's guarded writes);
// a write through the view itself, which names no guarded table, is now refused by
// the pool too (red-team rt40a F2's PostgreSQL twin), so the tombstones are not erased
// before the view is found.
func TestViewOverTombstoneTableWriteRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE acc (id bigint PRIMARY KEY, v int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	tombstoneKey2(t, ctx, dsn)
	testdb.Exec(t, raw, `CREATE VIEW tomb_view AS SELECT * FROM fencedsql_tomb_acc`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), `DELETE FROM tomb_view`); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("DELETE FROM tomb_view through the fenced pool: %v; want ErrUnsupported", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, `SELECT count(*) FROM fencedsql_tomb_acc`).Scan(&n); err != nil || n != 1 {
		t.Errorf("tombstones: %d (%v); want 1", n, err)
	}
}
