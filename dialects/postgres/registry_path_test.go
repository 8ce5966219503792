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

// The registry lives where its installer's search_path put it. A pool whose
// search_path leaves that schema out used to find no registry and guard nothing it
// records: it now fails its first use with ErrSchema naming the schema; with the
// schema on its search_path the registered table is guarded.
func TestRegistryOutsideSearchPath(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw, err := sql.Open("pgx", fencetest.WithParam(dsn, "search_path=shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{"CREATE SCHEMA shop",
		"CREATE TABLE shop.tenants (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "shop.tenants"}); err != nil {
		t.Fatal(err)
	}
	open := func(path string) *sql.DB {
		db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "search_path="+path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	var se *fencedsql.SchemaError
	if err := open("public").PingContext(ctx); !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "fencedsql_registry" {
		t.Fatalf("a pool that cannot see the registry: Ping = %v, want ErrSchema naming the registry", err)
	}
	_, err = open("shop,public").ExecContext(ctx, "INSERT INTO shop.tenants (id, balance) VALUES (1, 1)")
	if !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("a registered table through a pool that sees the registry, no token: %v, want ErrNoToken", err)
	}
}

// Two registries: public's, written by an installer whose search_path was public, and
// app's, by one whose search_path was app. A pool whose search_path is app,public
// found app's first and read only it (a red-team pass: public.accounts, registered,
// was written unfenced). Every registry of the database is read.
func TestRegistriesAllRead(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	rawOn := func(path string) *sql.DB {
		db, err := sql.Open("pgx", fencetest.WithParam(dsn, "search_path="+path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	pub, app := rawOn("public"), rawOn("app")
	const cols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	for _, q := range []string{"CREATE SCHEMA app", "CREATE TABLE public.accounts" + cols, "CREATE TABLE app.orders" + cols} {
		if _, err := pub.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := schema.RegisterTables(ctx, pub, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Fatal(err)
	}
	if err := schema.RegisterTables(ctx, app, postgres.Dialect, schema.GuardSpec{Table: "orders"}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "search_path=app,public"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range []string{"accounts", "orders"} {
		if _, err := db.ExecContext(ctx, "UPDATE "+table+" SET balance = 777, version = version + 1"); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Fatalf("%s, registered in one of two registries, no token: err = %v, want ErrNoToken (guarded)", table, err)
		}
	}
	// The same table recorded with other columns in the second registry: the pool
	// cannot know which the guard checks, and refuses.
	if err := schema.RegisterTables(ctx, app, postgres.Dialect, schema.GuardSpec{Table: "accounts", TokenColumn: "balance"}); err != nil {
		t.Fatal(err)
	}
	conflict, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "search_path=app,public"))
	if err != nil {
		t.Fatal(err)
	}
	defer conflict.Close()
	if err := conflict.PingContext(ctx); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("two registries recording accounts with different columns: Ping = %v, want ErrSchema", err)
	}
}

// The records fail closed (a red-team pass found both written unfenced):
//   - with the schema check off, a registry the session cannot see dropped the other
//     record too (the tables carrying the guard's triggers): a registry the database
//     answered with a problem now fails the pool whatever the check, and the two records
//     are read independently;
//   - a table carrying the guard's triggers renamed to a name with a dot in it was
//     guarded as schema.table, the real table written unfenced: the pool now refuses to
//     open, naming it.
func TestRecordsFailClosed(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const cols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	guard := postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Schema: "public", Name: "acct"}, "fence_token", "version")
	raw := rawWith(t, dsn, append([]string{"CREATE SCHEMA inst", "CREATE TABLE public.acct" + cols}, guard...)...)
	if _, err := raw.ExecContext(ctx, "INSERT INTO acct (id, balance, fence_token, version) VALUES (1, 5, 10, 1)"); err != nil {
		t.Fatal(err)
	}
	rawInst := rawWith(t, fencetest.WithParam(dsn, "search_path=inst"), "CREATE TABLE inst.other"+cols)
	if err := schema.RegisterTables(ctx, rawInst, postgres.Dialect, schema.GuardSpec{Table: "other"}); err != nil {
		t.Fatal(err)
	}
	open := func(params ...string) *sql.DB {
		d := dsn
		for _, p := range params {
			d = fencetest.WithParam(d, p)
		}
		db, err := sql.Open("fenced-pgx", d)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open("search_path=public", "fenced_tables=acct", "fenced_schema_check=false")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 3), "UPDATE acct SET balance = 0, version = version + 1 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("listed, check off, a registry out of sight: stale UPDATE err = %v, want ErrFenced or ErrSchema", err)
	}
	db = open("search_path=public", "fenced_tables=nothere", "fenced_schema_check=false")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 3), "UPDATE acct SET balance = 0, version = version + 1 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded by its triggers, check off, a registry out of sight: stale UPDATE err = %v, want ErrSchema (the registry)", err)
	}

	// A dot in the name of a table that carries the guard.
	if _, err := raw.ExecContext(ctx, `ALTER TABLE acct RENAME TO "acc.t"`); err != nil {
		t.Fatal(err)
	}
	db = open("search_path=public,inst", "fenced_tables=other")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 3), `UPDATE "acc.t" SET balance = 0, version = version + 1 WHERE id = 1`)
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || !strings.Contains(se.Table, "acc.t") {
		t.Fatalf(`a guarded table renamed to "acc.t": stale UPDATE err = %v, want ErrSchema naming it`, err)
	}
	var bal int64
	if err := raw.QueryRowContext(ctx, `SELECT balance FROM "acc.t" WHERE id = 1`).Scan(&bal); err != nil || bal != 5 {
		t.Fatalf("balance = %d (%v), want 5 unchanged", bal, err)
	}
}
