package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The guards read the floor table of the schema that was first on the installer's
// search_path; RaiseTokenFloor raises those, whatever the raising connection's
// search_path (a red-team pass: guards installed under search_path=app, the failover
// hook on the plain DSN raised public.fencedsql_floor, reported success, and writes
// with tokens 20 and 21 passed a floor of 1000). Guards in two schemas — one whose
// name quote_ident quotes — read two floor tables: both are raised, TokenFloor is the
// lower, MaxToken counts the higher, and no floor table is created in public.
func TestFloorGuardsInOtherSchemas(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA app`, `CREATE SCHEMA "App Floor"`)
	// app: guards installed the way fencedsql-schema -apply does, under search_path=app.
	appDSN := fencetest.WithParam(dsn, "search_path=app")
	appAdmin := rawWith(t, appDSN, accounts)
	reports, err := schema.Check(ctx, appAdmin, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		rawWith(t, appDSN, r.Fix...)
	}
	// "App Floor": guards installed on a connection whose search_path names it.
	odd := rawWith(t, dsn)
	odd.SetMaxOpenConns(1)
	stmts := append([]string{`SET search_path = "App Floor"`, accounts},
		postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	stmts = append(stmts, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)")
	for _, q := range stmts {
		if _, err := odd.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(appDSN, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, balance) VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}

	// The failover hook's connection: the plain DSN, search_path public.
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 1000); err != nil {
		t.Fatalf("RaiseTokenFloor: %v", err)
	}
	floors, err := schema.TokenFloors(ctx, admin, postgres.Dialect)
	got := map[string]uint64{}
	for _, f := range floors {
		got[f.Table] = f.Floor
	}
	if err != nil || len(got) != 2 || got["app.fencedsql_floor"] != 1000 || got["App Floor.fencedsql_floor"] != 1000 {
		t.Fatalf("TokenFloors = %+v, %v; want app's and App Floor's at 1000", floors, err)
	}
	var public *string
	if err := admin.QueryRowContext(ctx, "SELECT pg_catalog.to_regclass('public.fencedsql_floor')::text").Scan(&public); err != nil || public != nil {
		t.Fatalf("public.fencedsql_floor: %v (%v), want none created", public, err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 5 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("UPDATE under 20 after the raise to 1000: %v, want ErrBelowFloor", err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 21), "INSERT INTO accounts (id, balance) VALUES (2, 0)")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("INSERT under 21 after the raise to 1000: %v, want ErrBelowFloor", err)
	}
	_, err = admin.ExecContext(ctx, `UPDATE "App Floor".accounts SET fence_token = 30, version = version + 1 WHERE id = 1`)
	if err == nil || !errors.Is(fencedsql.AsGuardError(postgres.Dialect, err), fencedsql.ErrBelowFloor) {
		t.Errorf(`plain UPDATE of "App Floor".accounts under 30: %v, want the floor's refusal`, err)
	}

	// Floors apart: TokenFloor is the lower (what every guarded write is held to), MaxToken
	// the higher − 1 (what a new lock service must start above).
	rawWith(t, appDSN, "UPDATE fencedsql_floor SET floor = 2000 WHERE id = 1")
	if f, err := schema.TokenFloor(ctx, admin, postgres.Dialect); err != nil || f != 1000 {
		t.Fatalf("TokenFloor with floors 1000 and 2000 = %d, %v; want 1000", f, err)
	}
	if m, err := schema.MaxToken(ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "app.accounts"}); err != nil || m != 1999 {
		t.Fatalf("MaxToken = %d, %v; want 1999", m, err)
	}
}

// A floor table created after a raise starts at the database's highest floor: guards
// installed later through a session whose search_path starts with another schema read
// a new floor table, and at 0 it let every lease refused since the failover write
// again through them (tokens going back).
func TestFloorNewTableStartsAtHighest(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const table = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, "CREATE SCHEMA app")
	appDSN := fencetest.WithParam(dsn, "search_path=app")
	rawWith(t, appDSN, append([]string{"CREATE TABLE accounts" + table},
		postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	// Later, a second table guarded through the plain DSN (search_path public).
	rawWith(t, dsn, append([]string{"CREATE TABLE public.orders" + table},
		postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Schema: "public", Name: "orders"}, "fence_token", "version")...)...)
	floors, err := schema.TokenFloors(ctx, admin, postgres.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if len(floors) != 2 {
		t.Fatalf("floors = %+v, want two (app's and public's)", floors)
	}
	for _, f := range floors {
		if f.Floor != 1000 {
			t.Errorf("floor %+v, want 1000: a new floor table starts at the highest", f)
		}
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=public.orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO public.orders (id, balance) VALUES (1, 0)")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("token 20 into the table guarded after the raise to 1000: err = %v, want ErrBelowFloor", err)
	}
}

// TestCheckSkipsUnreadableOtherSchemaFloor (over-refusal; regression of
// cc57ac0). schema.Check now reads every floor table the database's guards read
// (lostFloors → TokenFloors) for every guarded table it checks — also floors in schemas
// the checking role has no USAGE on. A role that may check public.accounts (its guards
// read public.fencedsql_floor, which is fine) gets no report at all: Check fails with the
// server's raw "permission denied for schema …" because another team's schema also has
// guards. Before cc57ac0 the same Check answered.
//
// Right behaviour: Check reports the table; floors it cannot read are skipped (or named
// as a note), not a failure of the whole check; at least the floor the table's own guard
// reads decides its report.
func TestCheckSkipsUnreadableOtherSchemaFloor(t *testing.T) {
	role := fmt.Sprintf("rt25a_chk_%d", time.Now().UnixNano()%1_000_000_000)
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const tbl = "(id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	g := postgres.Dialect.(dialect.Guarder)
	admin := rawWith(t, dsn, `CREATE SCHEMA secret`, "CREATE ROLE "+role+" LOGIN PASSWORD 'x'")
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP OWNED BY " + role)
		_, _ = admin.Exec("DROP ROLE IF EXISTS " + role)
	})
	rawWith(t, fencetest.WithParam(dsn, "search_path=public"), append([]string{"CREATE TABLE accounts " + tbl}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	rawWith(t, fencetest.WithParam(dsn, "search_path=secret"), append([]string{"CREATE TABLE vault " + tbl}, g.GuardDDL(dialect.TableName{Name: "vault"}, "fence_token", "version")...)...)
	testdb.Exec(t, admin, "GRANT SELECT ON accounts TO "+role)
	chkDSN := strings.Replace(dsn, "fenced:fenced@", role+":x@", 1)
	if chkDSN == dsn {
		t.Fatal("set-up: the DSN has no fenced:fenced@ to replace")
	}
	chk := rawWith(t, chkDSN)
	reps, err := schema.Check(ctx, chk, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Errorf("schema.Check(accounts) as a role without USAGE on schema secret (whose guards read their own floor): %v; want a report for accounts", err)
	} else {
		t.Logf("report: %+v", reps[0])
	}
}
