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

// The UNLOGGED lint finds the token floor table and its copy in the schema the guard
// functions name them with (floorSchema: the installer's), not through the session's
// search_path. With the guards installed in schema fsch and the application's session
// on the default search_path, an UNLOGGED floor and copy are refused before the first
// guarded write (ErrSchema, nothing written). Red-team rt11f F4: looked up by bare
// name, they passed and the pool wrote; a crash restart or failover then forgets the
// floor.
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
	// (GuardInstalledQuery looks the floor up on the session's path: "no database-side
	// guard installed" there, fail-closed; see design.md, Known open findings.)
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
