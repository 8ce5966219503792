package postgres_test

// Red-team rt25a: G16 "Tokens never go back" — the floor's installation and raise
// after the floor table lost its row, PostgreSQL 15.

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

// rt25aLostFloor: guarded accounts (row 1 at token 5), floor raised to 50, then the
// floor table's row lost (rt24c's setup). The guards then refuse every token below the
// copy (50): the state rt24c F1 asked for. Returns the dsn and raw pool.
func rt25aLostFloor(t *testing.T) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE ledger (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(context.Background(), raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	return dsn, raw
}

// rt25aStaleUpdate runs a fenced UPDATE of accounts row 1 under token 20 (below the
// floor 50) and returns its error.
func rt25aStaleUpdate(t *testing.T, dsn string) error {
	t.Helper()
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 99 WHERE id = 1")
	return err
}

// TestRTrt25aGuardInstallAfterLostFloorRowZeroesFloor (fail-open). With the floor
// table's row lost, the guards refuse every token below the floor's copy (50), and
// schema.Check says to write the row back with RaiseTokenFloor at the lock service's
// LastToken + 1. But installing a guard on another table (fencedsql-schema -apply's Fix
// for a newly guarded table, or an upgrade of the guards: GuardDDL → FloorDDL) writes
// the row back itself: initialFloor inserts the highest floor of the *other* floor
// tables (none here: 0), ignoring this table's own copy (fencedsql_floor_seq, 50), and
// the sync trigger then sets the copy to 0. The floor is silently gone: token 20, refused
// before the install, is accepted after it, and TokenFloor reports 0 with no error.
//
// Right behaviour: an installation never lowers the floor in force: a missing row is
// written back at least at the table's own copy (GREATEST with
// pg_sequence_last_value of its own sequence), or the installation leaves the row
// missing (refusing) until RaiseTokenFloor writes it.
func TestRTrt25aGuardInstallAfterLostFloorRowZeroesFloor(t *testing.T) {
	dsn, raw := rt25aLostFloor(t)
	if err := rt25aStaleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the install, token 20 with the floor row lost (copy 50): %v; want ErrBelowFloor", err)
	}
	// fencedsql-schema -apply for the newly guarded ledger: its Fix, in one transaction.
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range reps[0].Fix {
		if _, err := tx.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	fl, flErr := schema.TokenFloor(context.Background(), raw, postgres.Dialect)
	if err := rt25aStaleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after installing a guard on another table, token 20 (floor was 50, row lost): %v; TokenFloor now %d (%v); want ErrBelowFloor: an installation must not lower the floor", rt24cErr(err), fl, flErr)
	}
}

// TestRTrt25aRaiseAfterLostFloorRowLowersFloor (fail-open). With the floor row lost and
// the copy at 50, RaiseTokenFloor(10) — the operator following schema.Check's advice
// with a lock service whose LastToken is 9 (one switched and not yet raised, or a
// stale hook value) — writes the row back at 10 and the sync trigger sets the copy to
// 10: the floor in force goes down from 50 to 10, and token 20, refused before the
// "raise", is accepted after it. RaiseTokenFloor documents "a floor at or below a
// table's current one leaves it unchanged", and the copy is never below a committed
// floor (FloorSQLState); PostgreSQL keeps the committed floor in the copy, which the
// install's initialFloor already reads for other schemas.
//
// Right behaviour: RaiseTokenFloor on a floor table without its row writes back at
// least the table's copy: GREATEST(floor, pg_sequence_last_value(copy)).
func TestRTrt25aRaiseAfterLostFloorRowLowersFloor(t *testing.T) {
	dsn, raw := rt25aLostFloor(t)
	if err := rt25aStaleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the raise, token 20 with the floor row lost (copy 50): %v; want ErrBelowFloor", err)
	}
	if err := schema.RaiseTokenFloor(context.Background(), raw, postgres.Dialect, 10); err != nil {
		t.Fatal(err)
	}
	fl, _ := schema.TokenFloor(context.Background(), raw, postgres.Dialect)
	if err := rt25aStaleUpdate(t, dsn); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after RaiseTokenFloor(10) over a lost row with copy 50, token 20: %v; TokenFloor %d; want ErrBelowFloor: a raise never lowers the floor in force", rt24cErr(err), fl)
	}
}

// TestRTrt25aPrintedInstallScriptRacesRaise (fail-open, race; rt20t F4 again). The
// floor's installation and a raise serialise on floorLock, a transaction-level advisory
// lock (pg_advisory_xact_lock) that FloorDDL takes in its first statement. That holds
// only when the installation is one transaction (fencedsql-schema -apply). The script
// fencedsql-schema prints for a DBA to run (printDDL: the Fix statements, no BEGIN/
// COMMIT), run with psql -f, is in autocommit: the lock is released at the end of its
// own statement, and a raise running between the script's statements neither waits for
// the installation nor sees its guards. Here the script installs guards in schema two
// (search_path=two) while schema one's guards read the floor; a raise to 500 runs after
// the script's initialFloor (which started two's floor at one's 0) and before the guard
// function is created: RaiseTokenFloor returns nil having raised only one's floor, and
// two.accounts' guards then accept token 20 with the floor 500 in force elsewhere.
//
// Right behaviour: GuardDDL's statements (the Dialect API and the printed Fix) are safe
// however they are run: FloorDDL's lock is a session-level lock held until the guard
// exists (released by GuardDDL's last statement), or the installation refuses to run
// outside a transaction block (an error naming the transaction), or the raise also
// raises floor tables no guard reads yet; and the printed script wraps them in
// BEGIN/COMMIT (PostgreSQL DDL is transactional).
func TestRTrt25aPrintedInstallScriptRacesRaise(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA one`, `CREATE SCHEMA two`)
	guardDDL := postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	rawWith(t, fencetest.WithParam(dsn, "search_path=one"), append([]string{accounts}, guardDDL...)...)

	// The printed script, run statement by statement in autocommit (psql -f).
	// One session, as psql's (a pooled *sql.DB drops a connection left in a transaction).
	script, err := rawWith(t, fencetest.WithParam(dsn, "search_path=two")).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer script.Close()
	// Decided: the installation runs in one transaction (-apply does; -print wraps its
	// script in BEGIN; … COMMIT; where DDL is transactional): run as printed.
	stmts := append([]string{"BEGIN", accounts}, append(guardDDL, "COMMIT")...)
	split := -1
	for i, s := range stmts {
		if strings.Contains(s, "VALUES (1, m) ON CONFLICT (id) DO UPDATE") {
			split = i + 1
		}
	}
	if split < 0 {
		t.Fatal("initialFloor not found in GuardDDL")
	}
	// run runs one statement of the script; false when the installation refused to run
	// outside a transaction block (a right behaviour: nothing to race then).
	run := func(s string) bool {
		if _, err := script.ExecContext(ctx, s); err != nil {
			if strings.Contains(err.Error(), "transaction") {
				t.Logf("the installation refuses to run in autocommit: %v", err)
				return false
			}
			t.Fatalf("%s: %v", s, err)
		}
		return true
	}
	for _, s := range stmts[:split] {
		if !run(s) {
			return
		}
	}
	raised := make(chan error, 1)
	go func() { raised <- schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 500) }()
	select {
	case err := <-raised: // the raise did not wait for the installation in progress
		if err != nil {
			t.Fatal(err)
		}
		raised <- nil
	case <-time.After(time.Second): // it waits (as it should): go on with the script
	}
	for _, s := range stmts[split:] {
		if !run(s) {
			<-raised
			return
		}
	}
	if err := <-raised; err != nil {
		t.Fatal(err)
	}
	var one, two int64
	if err := admin.QueryRowContext(ctx, "SELECT (SELECT floor FROM one.fencedsql_floor), (SELECT floor FROM two.fencedsql_floor)").Scan(&one, &two); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(fencetest.WithParam(dsn, "search_path=two"), "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (1, 1)")
	if two < 500 || !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("RaiseTokenFloor(500) returned nil during the printed install script: floors one=%d two=%d; a write under token 20 on two.accounts: %v; want two's floor >= 500 and ErrBelowFloor", one, two, rt24cErr(werr))
	}
}

// TestRTrt25aDisabledFloorSyncOffSearchPathUnreported (fail-open, reporting). The
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
func TestRTrt25aDisabledFloorSyncOffSearchPathUnreported(t *testing.T) {
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
		t.Errorf("app.fencedsql_floor's sync trigger disabled: schema.Check(app.accounts) Guarded=%v OK=%v problems %q; after RaiseTokenFloor(50) (nil), token 20 on app.accounts: %v; want Check to report it (or the raise to fail, or ErrBelowFloor)", reps[0].Guarded, reps[0].OK(), reps[0].Problems, rt24cErr(werr))
	}
}

// TestRTrt25aInstallAdoptsStaleOrphanFloor (fail-open). A floor table no guard reads
// any more (its schema's guards removed: UnguardDDL drops the functions, not the floor
// table) is not raised by RaiseTokenFloor, which raises only the floors the guards read.
// A later guard installation in that schema finds the table and keeps its row
// (initialFloor: "An existing row is kept"): the new guards enforce the stale floor, not
// the one the database's other guards enforce. Here: two.ledger guarded, floor 100;
// its guard removed; RaiseTokenFloor(500) at a failover (returns nil, one's floor 500);
// two.ledger guarded again — its guards read two.fencedsql_floor, still 100, and a
// lease refused since the failover (token 300) writes two.ledger.
//
// Right behaviour: an installation never starts its guards below the floors the
// database's guards enforce: initialFloor raises an existing row to the highest floor
// (and copy) of the other floor tables as well (ON CONFLICT DO UPDATE SET floor =
// GREATEST(floor, m)) — floors only go up, so this is always safe.
func TestRTrt25aInstallAdoptsStaleOrphanFloor(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	const tbl = "(id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	admin := rawWith(t, dsn, `CREATE SCHEMA one`, `CREATE SCHEMA two`)
	g := postgres.Dialect.(dialect.Guarder)
	ledgerDDL := append([]string{"CREATE TABLE IF NOT EXISTS ledger " + tbl}, g.GuardDDL(dialect.TableName{Name: "ledger"}, "fence_token", "version")...)
	rawWith(t, fencetest.WithParam(dsn, "search_path=one"), append([]string{"CREATE TABLE accounts " + tbl}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	two := rawWith(t, fencetest.WithParam(dsn, "search_path=two"), ledgerDDL...)
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, two, g.UnguardDDL(dialect.TableName{Name: "ledger"})...) // two's guards removed
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 500); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, two, ledgerDDL...) // guarded again
	var f1, f2 int64
	if err := admin.QueryRowContext(ctx, "SELECT (SELECT floor FROM one.fencedsql_floor), (SELECT floor FROM two.fencedsql_floor)").Scan(&f1, &f2); err != nil {
		t.Fatal(err)
	}
	fl, flErr := schema.TokenFloor(ctx, admin, postgres.Dialect)
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=two.ledger"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 300), "INSERT INTO two.ledger (id, balance) VALUES (1, 1)")
	if !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("after RaiseTokenFloor(500) and guarding two.ledger again: floors one=%d two=%d (TokenFloor %d, %v); token 300 on two.ledger: %v; want ErrBelowFloor", f1, f2, fl, flErr, rt24cErr(werr))
	}
}

// TestRTrt25aCheckFailsOnUnreadableOtherSchemaFloor (over-refusal; regression of
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
func TestRTrt25aCheckFailsOnUnreadableOtherSchemaFloor(t *testing.T) {
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

// TestRTrt25aForeignTriggerBlocksRaise (over-refusal of the failover step; DoS by an
// application role). RaiseTokenFloor decides which floor tables to raise from
// GuardFloorsQuery: every enabled trigger named fencedsql_guard/fencedsql_guard_delete
// in the database whose function's source contains `FROM <schema>.fencedsql_floor f
// WHERE` — whoever owns the trigger and the function, whatever the function is called.
// An application role that owns a schema (a plain connection: the fenced driver's name
// checks do not apply) creates a table with a trigger of that name whose function's
// source names a schema without a floor table. RaiseTokenFloor then runs `INSERT INTO
// nosuch.fencedsql_floor …` in its one transaction, which fails: the floor is raised
// nowhere, the failover hook reports NOT raised at every retry, and every stale lease
// keeps writing the real guarded tables until an operator finds the decoy.
//
// Right behaviour: RaiseTokenFloor trusts only guards that are this library's (the
// guard function of the trigger's table, by name, with the guard version marker —
// what GuardInstalledQuery checks), or skips/reports floor tables that do not exist
// instead of failing the raise of the real ones.
func TestRTrt25aForeignTriggerBlocksRaise(t *testing.T) {
	role := fmt.Sprintf("rt25a_app_%d", time.Now().UnixNano()%1_000_000_000)
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin := rawWith(t, dsn, "CREATE ROLE "+role+" LOGIN PASSWORD 'x'", "CREATE SCHEMA appown AUTHORIZATION "+role)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA IF EXISTS appown CASCADE")
		_, _ = admin.Exec("DROP OWNED BY " + role)
		_, _ = admin.Exec("DROP ROLE IF EXISTS " + role)
	})
	testdb.Exec(t, admin, append([]string{"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"},
		g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	appDSN := strings.Replace(dsn, "fenced:fenced@", role+":x@", 1)
	if appDSN == dsn {
		t.Fatal("set-up: the DSN has no fenced:fenced@ to replace")
	}
	rawWith(t, appDSN,
		"CREATE TABLE appown.decoy (id int)",
		"CREATE FUNCTION appown.decoy_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; -- FROM nosuch.fencedsql_floor f WHERE\n RETURN NEW; END $$",
		"CREATE TRIGGER fencedsql_guard BEFORE INSERT ON appown.decoy FOR EACH ROW EXECUTE FUNCTION appown.decoy_fn()")
	rerr := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 50)
	var fl int64
	if err := admin.QueryRowContext(ctx, "SELECT floor FROM public.fencedsql_floor").Scan(&fl); err != nil {
		t.Fatal(err)
	}
	if rerr != nil || fl != 50 {
		t.Errorf("RaiseTokenFloor(50) with an application role's decoy trigger named fencedsql_guard: %v; public.fencedsql_floor (read by accounts' real guards) = %d; want 50 raised", rerr, fl)
	}
}

// TestRTrt25aInitialFloorRunsAppCodeAsOwner (fail-open; privilege escalation from an
// application role to the guards' owner). initialFloor (31040eb) reads `max(floor)` of
// every table named fencedsql_floor in any schema of the database, whoever owns it, with
// the installer's rights (fencedsql-schema -owner: a role without BYPASSRLS). An
// application role that owns a schema (a plain connection) creates its own
// appown.fencedsql_floor with row level security whose policy calls its function: the
// installation's read runs that function as the installer. Here the function lowers
// public.fencedsql_floor (owned by the installer) to 0. The next guard installation —
// fencedsql-schema -apply of any table, e.g. a newly guarded ledger — runs it: the floor
// raised to 50 at the failover is 0 afterwards (the install's own re-copy puts the copy
// at 0 too), and a stale token 20 writes accounts.
//
// Right behaviour: initialFloor reads only floor tables that are this library's (owned
// by the installing role / the guards' owner, or read by an installed guard), and reads
// them with row security off (SET LOCAL row_security = off makes a policy an error, not
// code run as the installer); never runs code another role controls.
func TestRTrt25aInitialFloorRunsAppCodeAsOwner(t *testing.T) {
	n := time.Now().UnixNano() % 1_000_000_000
	owner, app := fmt.Sprintf("rt25a_own_%d", n), fmt.Sprintf("rt25a_app_%d", n)
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin := rawWith(t, dsn,
		"CREATE ROLE "+owner+" LOGIN PASSWORD 'x' NOSUPERUSER NOBYPASSRLS",
		"CREATE ROLE "+app+" LOGIN PASSWORD 'x' NOSUPERUSER NOBYPASSRLS",
		"GRANT CREATE, USAGE ON SCHEMA public TO "+owner,
		"CREATE SCHEMA appown AUTHORIZATION "+app)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA IF EXISTS appown CASCADE")
		for _, r := range []string{owner, app} {
			_, _ = admin.Exec("DROP OWNED BY " + r + " CASCADE")
			_, _ = admin.Exec("DROP ROLE IF EXISTS " + r)
		}
	})
	as := func(role string) string {
		d := strings.Replace(dsn, "fenced:fenced@", role+":x@", 1)
		if d == dsn {
			t.Fatal("set-up: the DSN has no fenced:fenced@ to replace")
		}
		return d
	}
	tbl := func(name string) string {
		return "CREATE TABLE " + name + " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	}
	own := rawWith(t, fencetest.WithParam(as(owner), "search_path=public"),
		append([]string{tbl("accounts")}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	testdb.Exec(t, admin, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(ctx, own, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	// The application role's decoy, on a plain connection.
	rawWith(t, as(app),
		"CREATE TABLE appown.fencedsql_floor (id int PRIMARY KEY, floor bigint NOT NULL)",
		"INSERT INTO appown.fencedsql_floor VALUES (1, 1)",
		"CREATE FUNCTION appown.pwn() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN UPDATE public.fencedsql_floor SET floor = 0 WHERE id = 1; RETURN true; EXCEPTION WHEN OTHERS THEN RETURN true; END $$",
		"ALTER TABLE appown.fencedsql_floor ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY p ON appown.fencedsql_floor USING (appown.pwn())",
		"GRANT USAGE ON SCHEMA appown TO PUBLIC",
		"GRANT SELECT ON appown.fencedsql_floor TO PUBLIC")
	// Later: the owner guards one more table (fencedsql-schema -apply, one transaction).
	tx, err := own.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var installErr error
	for _, s := range append([]string{tbl("ledger")}, g.GuardDDL(dialect.TableName{Name: "ledger"}, "fence_token", "version")...) {
		if _, installErr = tx.ExecContext(ctx, s); installErr != nil {
			break // refusing the decoy is fine: the floor must be intact either way
		}
	}
	if installErr == nil {
		installErr = tx.Commit()
	} else {
		_ = tx.Rollback()
	}
	t.Logf("installation of ledger: %v", installErr)
	var fl int64
	if err := admin.QueryRowContext(ctx, "SELECT floor FROM public.fencedsql_floor").Scan(&fl); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 9 WHERE id = 1")
	if fl < 50 || !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("after the owner's guard installation of ledger next to an application role's RLS decoy appown.fencedsql_floor: public floor %d (was 50); token 20 on accounts: %v; want floor 50 and ErrBelowFloor", fl, rt24cErr(werr))
	}
}

// TestRTrt25aTokenFloorRunsAppCodeAsOwner (fail-open; privilege escalation, read-only
// tools). The same RLS decoy as TestRTrt25aInitialFloorRunsAppCodeAsOwner, reached by
// TokenFloors (and so schema.TokenFloor, schema.Check's lostFloors, fencedsql-schema
// -raise-floor's report): GuardFloorsQuery lists appown.fencedsql_floor because an
// application role's trigger named fencedsql_guard names it, and readFloor's
// `SELECT MAX(floor) FROM appown.fencedsql_floor` runs the policy's function as the
// operator. A read-only check by the guards' owner lowers the floor from 50 to 0 (the
// sync trigger copies 0 into the sequence at once), and token 20 then writes accounts.
//
// Right behaviour: the floor tools read only this library's floor tables, with
// row_security off; never run another role's code.
func TestRTrt25aTokenFloorRunsAppCodeAsOwner(t *testing.T) {
	n := time.Now().UnixNano() % 1_000_000_000
	owner, app := fmt.Sprintf("rt25a_own_%d", n), fmt.Sprintf("rt25a_app_%d", n)
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin := rawWith(t, dsn,
		"CREATE ROLE "+owner+" LOGIN PASSWORD 'x' NOSUPERUSER NOBYPASSRLS",
		"CREATE ROLE "+app+" LOGIN PASSWORD 'x' NOSUPERUSER NOBYPASSRLS",
		"GRANT CREATE, USAGE ON SCHEMA public TO "+owner,
		"CREATE SCHEMA appown AUTHORIZATION "+app)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA IF EXISTS appown CASCADE")
		for _, r := range []string{owner, app} {
			_, _ = admin.Exec("DROP OWNED BY " + r + " CASCADE")
			_, _ = admin.Exec("DROP ROLE IF EXISTS " + r)
		}
	})
	as := func(role string) string {
		d := strings.Replace(dsn, "fenced:fenced@", role+":x@", 1)
		if d == dsn {
			t.Fatal("set-up: the DSN has no fenced:fenced@ to replace")
		}
		return d
	}
	tbl := func(name string) string {
		return "CREATE TABLE " + name + " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	}
	own := rawWith(t, fencetest.WithParam(as(owner), "search_path=public"),
		append([]string{tbl("accounts")}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	testdb.Exec(t, admin, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(ctx, own, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	// The application role's decoy, on a plain connection.
	rawWith(t, as(app),
		"CREATE TABLE appown.fencedsql_floor (id int PRIMARY KEY, floor bigint NOT NULL)",
		"INSERT INTO appown.fencedsql_floor VALUES (1, 1)",
		"CREATE FUNCTION appown.pwn() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN UPDATE public.fencedsql_floor SET floor = 0 WHERE id = 1; RETURN true; EXCEPTION WHEN OTHERS THEN RETURN true; END $$",
		"ALTER TABLE appown.fencedsql_floor ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY p ON appown.fencedsql_floor USING (appown.pwn())",
		"GRANT USAGE ON SCHEMA appown TO PUBLIC",
		"GRANT SELECT ON appown.fencedsql_floor TO PUBLIC")
	// A decoy guard trigger whose function names appown's floor table (see
	// TestRTrt25aForeignTriggerBlocksRaise): TokenFloors now reads it.
	rawWith(t, as(app),
		"CREATE TABLE appown.decoy (id int)",
		"CREATE FUNCTION appown.decoy_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; -- FROM appown.fencedsql_floor f WHERE\n RETURN NEW; END $$",
		"CREATE TRIGGER fencedsql_guard BEFORE INSERT ON appown.decoy FOR EACH ROW EXECUTE FUNCTION appown.decoy_fn()")
	// The owner checks the floor (read-only: TokenFloor, as schema.Check does).
	_, _ = schema.TokenFloor(ctx, own, postgres.Dialect)
	var fl int64
	if err := admin.QueryRowContext(ctx, "SELECT floor FROM public.fencedsql_floor").Scan(&fl); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 9 WHERE id = 1")
	if fl < 50 || !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("after the owner's schema.TokenFloor next to an application role's decoy guard trigger and RLS decoy appown.fencedsql_floor: public floor %d (was 50); token 20 on accounts: %v; want floor 50 and ErrBelowFloor", fl, rt24cErr(werr))
	}
}
