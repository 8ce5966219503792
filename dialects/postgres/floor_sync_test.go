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
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The floor's sync function (fencedsql_floor_sync, SECURITY DEFINER) sets the floor's
// copy only when it fires as the floor table's own trigger: attached to another table
// of the schema (here by the superuser the tests run as, who can EXECUTE it; the
// application role cannot, see fencedsql-schema's TestFloorSyncNotAttachableByApp), a
// row written there is refused and the copy keeps the floor, so a token below the
// floor stays refused (a red-team pass: the copy went to 0 and the guard's fast path
// accepted a stale token). EXECUTE on it is not PUBLIC's.
func TestFloorSyncRefusesOtherTables(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	pgExec(t, raw, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE notes (id int PRIMARY KEY DEFAULT 1, floor bigint)")
	pgExec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	fenced, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fenced.Close() })
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id, balance) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}

	var public bool
	if err := raw.QueryRow("SELECT pg_catalog.has_function_privilege('public', 'fencedsql_floor_sync()', 'EXECUTE')").Scan(&public); err != nil || public {
		t.Errorf("PUBLIC may EXECUTE fencedsql_floor_sync(): %v, %v", public, err)
	}
	pgExec(t, raw, "CREATE TRIGGER forged AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION fencedsql_floor_sync()")
	if _, err := raw.Exec("INSERT INTO notes (floor) VALUES (0)"); err == nil {
		t.Error("a row of another table firing fencedsql_floor_sync(): accepted")
	}
	var copyVal int64
	if err := raw.QueryRow("SELECT pg_catalog.pg_sequence_last_value('fencedsql_floor_seq')").Scan(&copyVal); err != nil || copyVal != 100 {
		t.Errorf("the floor's copy after the forged trigger: %d, %v; want 100", copyVal, err)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE accounts SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("UPDATE under token 50, floor 100: %v, want ErrBelowFloor", err)
	}
	// The floor table's own trigger still copies a raise.
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 120); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow("SELECT pg_catalog.pg_sequence_last_value('fencedsql_floor_seq')").Scan(&copyVal); err != nil || copyVal != 120 {
		t.Errorf("the floor's copy after a raise to 120: %d, %v", copyVal, err)
	}
}

// A floor whose sync function is of an older version (the one every role could
// EXECUTE, which set the copy from any table it fired on) is reported by
// GuardInstalledQuery as not installed; the guard's DDL replaces it and revokes
// PUBLIC's EXECUTE.
func TestFloorSyncOlderVersionNotInstalled(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	g := postgres.Dialect.(dialect.Guarder)
	ddl := g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	pgExec(t, raw, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	pgExec(t, raw, ddl...)
	installed := func() (n int, public bool) {
		t.Helper()
		q, args := g.GuardInstalledQuery(dialect.TableName{Name: "accounts"})
		if err := raw.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := raw.QueryRow("SELECT pg_catalog.has_function_privilege('public', 'fencedsql_floor_sync()', 'EXECUTE')").Scan(&public); err != nil {
			t.Fatal(err)
		}
		return n, public
	}
	if n, public := installed(); n != 1 || public {
		t.Fatalf("fresh guard: installed %d, PUBLIC EXECUTE %v", n, public)
	}
	// The previous version's body and grants.
	pgExec(t, raw, `CREATE OR REPLACE FUNCTION fencedsql_floor_sync() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  PERFORM pg_catalog.setval(pg_catalog.format('%I.%I', TG_TABLE_SCHEMA, 'fencedsql_floor_seq')::pg_catalog.regclass, NEW.floor, true);
  RETURN NULL;
END $$`, "GRANT EXECUTE ON FUNCTION fencedsql_floor_sync() TO PUBLIC")
	if n, _ := installed(); n != 0 {
		t.Errorf("older sync function: GuardInstalledQuery says installed")
	}
	pgExec(t, raw, ddl...)
	if n, public := installed(); n != 1 || public {
		t.Errorf("after the guard's DDL again: installed %d, PUBLIC EXECUTE %v", n, public)
	}
}

// TestDisabledFloorSyncOffSearchPathReported (fail-open, reporting). The
// guards of app.accounts read app.fencedsql_floor and its copy app.fencedsql_floor_seq
// (installed with search_path=app). With the floor table's sync trigger disabled (a
// DBA's ALTER TABLE … DISABLE TRIGGER, a restore that disabled triggers), a raise
// writes the table but not the copy, and the guards' fast path accepts every token at
// or above the stale copy: RaiseTokenFloor(50) returns nil and token 20 then writes.
// schema.Check catches a disabled sync trigger only "where the session finds the floor
// table" (GuardInstalledQuery: to_regclass('fencedsql_floor') by the checker's
// search_path), not the floor table the table's guards read: run with the
// application's DSN (search_path public, which has its own healthy floor table for
// other guarded tables) it reports app.accounts guarded and fine.
//
// Right behaviour: GuardInstalledQuery checks the sync trigger and the sequence of the
// floor table the table's guard function reads (floorSchema, as the UNLOGGED lint
// already does), so schema.Check reports the disabled sync trigger; and/or
// RaiseTokenFloor verifies the copy equals the raised floor after its write (and fails
// when it does not). The test passes when any of these holds.
func TestDisabledFloorSyncOffSearchPathReported(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA app`)
	guardDDL := postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	rawWith(t, fencetest.WithParam(dsn, "search_path=app"), append([]string{accounts}, guardDDL...)...)
	rawWith(t, fencetest.WithParam(dsn, "search_path=public"), append([]string{accounts}, guardDDL...)...)
	testdb.Exec(t, admin, "ALTER TABLE app.fencedsql_floor DISABLE TRIGGER fencedsql_floor_sync")
	reps, err := schema.Check(ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "app.accounts"})
	if err != nil {
		t.Fatal(err)
	}
	reported := !reps[0].Guarded
	for _, p := range reps[0].Problems {
		if strings.Contains(p, "floor") {
			reported = true
		}
	}
	raiseErr := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 50)
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=app.accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO app.accounts (id, balance) VALUES (1, 1)")
	if !reported && raiseErr == nil && !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("app.fencedsql_floor's sync trigger disabled: schema.Check(app.accounts) Guarded=%v OK=%v problems %q; after RaiseTokenFloor(50) (nil), token 20 on app.accounts: %v; want Check to report it (or the raise to fail, or ErrBelowFloor)", reps[0].Guarded, reps[0].OK(), reps[0].Problems, errText(werr))
	}
}
