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
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The UNLOGGED lint (lint.go unloggedQuery) resolves the token floor table and its
// copy by their bare names, "where the session finds them", but the guards name them
// with the installer's schema (withFloorTable: the first schema of the installer's
// search_path). When the application's session does not have that schema on its
// search_path (guards kept in a schema of their own, the table named qualified in
// fenced_tables), to_regclass gives NULL and an UNLOGGED floor and copy pass the lazy
// lint: the pool writes, and a crash restart or failover forgets the floor (the
// PostgreSQL side of red-team rt10f F1 again). Fix: dialects/postgres/lint.go — resolve
// the floor as the guard functions do (the schema in the guard's body, or
// GuardFloorsQuery), not by the session's search_path.
func TestUnloggedFloorFoundOffSearchPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	pgExec(t, admin,
		"CREATE SCHEMA fsch",
		"CREATE TABLE fsch.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	installer, err := sql.Open("pgx", dsn+"&search_path=fsch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { installer.Close() })
	spec := schema.GuardSpec{Table: "fsch.accounts"}
	reports, err := schema.Check(ctx, installer, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	pgExec(t, installer, reports[0].Fix...)
	var where string
	if err := admin.QueryRow("SELECT relnamespace::regnamespace::text FROM pg_class WHERE relname = 'fencedsql_floor'").Scan(&where); err != nil || where != "fsch" {
		t.Fatalf("floor in %q (%v), want fsch", where, err)
	}
	pgExec(t, admin, "ALTER TABLE fsch.fencedsql_floor SET UNLOGGED", "ALTER SEQUENCE fsch.fencedsql_floor_seq SET UNLOGGED")

	// Control: with the installer's search_path both are reported.
	reports, err = schema.Check(ctx, installer, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(reports[0].Problems, "\n"); !strings.Contains(p, "fencedsql_floor is UNLOGGED") {
		t.Fatalf("installer's check: %q", p)
	}
	// The application's session (default search_path).
	reports, err = schema.Check(ctx, admin, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	// (It reports "no database-side guard installed" there — wrong, but not silent.)
	t.Logf("schema.Check on the application's search_path: %q", reports[0].Problems)
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=fsch.accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO fsch.accounts (id, balance) VALUES (1, 1)")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("fenced write with the floor UNLOGGED: %v, want ErrSchema", err)
	}
}
