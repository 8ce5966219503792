package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
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
