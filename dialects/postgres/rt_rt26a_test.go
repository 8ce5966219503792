package postgres_test

// Red-team rt26a: the floor hardening of 3564e0c (floorTableSafe, initialFloor's
// GREATEST upsert, GuardFloorsQuery's writable column), PostgreSQL 15.

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

// rt26aRoles creates an owner role (CREATE on public) and an application role with the
// given extra admin statements, and returns the admin pool and a DSN maker.
func rt26aRoles(t *testing.T, dsn string, extra ...func(owner, app string) []string) (admin *sql.DB, owner, app string, as func(string) string) {
	t.Helper()
	n := time.Now().UnixNano() % 1_000_000_000
	owner, app = fmt.Sprintf("rt26a_own_%d", n), fmt.Sprintf("rt26a_app_%d", n)
	stmts := []string{
		"CREATE ROLE " + owner + " LOGIN PASSWORD 'x' NOSUPERUSER NOBYPASSRLS",
		"CREATE ROLE " + app + " LOGIN PASSWORD 'x' NOSUPERUSER NOBYPASSRLS",
		"GRANT CREATE, USAGE ON SCHEMA public TO " + owner,
	}
	for _, e := range extra {
		stmts = append(stmts, e(owner, app)...)
	}
	admin = rawWith(t, dsn, stmts...)
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA IF EXISTS rt26a_appown CASCADE")
		for _, r := range []string{owner, app} {
			_, _ = admin.Exec("DROP OWNED BY " + r + " CASCADE")
			_, _ = admin.Exec("DROP ROLE IF EXISTS " + r)
		}
	})
	as = func(role string) string {
		d := strings.Replace(dsn, "fenced:fenced@", role+":x@", 1)
		if d == dsn {
			t.Fatal("set-up: the DSN has no fenced:fenced@ to replace")
		}
		return d
	}
	return admin, owner, app, as
}

func rt26aTbl(name string) string {
	return "CREATE TABLE " + name + " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
}

// TestRTrt26aDecoyFloorRaisesRealFloorToMax (over-refusal / denial of service by an
// application role). 3564e0c made initialFloor raise an existing floor row to the
// highest floor of every "safe" floor table of the database (a plain table without row
// security whose floor is a bigint), whoever owns it and whether or not any guard
// reads it. An application role that may create a table anywhere (its own schema)
// creates rt26a_appown.fencedsql_floor with floor 2^63-1000; the next time the guards'
// owner installs or re-applies a guard (fencedsql-schema -apply), the real floor in
// public is raised to that value, and every fenced write with a valid token (60, above
// the floor 50 the lock service set) is refused with ErrBelowFloor — for good: no tool
// lowers a floor.
//
// Right behaviour: initialFloor adopts only floor tables that this library's guards
// read or that the installing role owns (the tables GuardFloorsQuery lists as
// writable); an application role's table never moves the real floor.
func TestRTrt26aDecoyFloorRaisesRealFloorToMax(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin, owner, app, as := rt26aRoles(t, dsn, func(owner, app string) []string {
		return []string{"CREATE SCHEMA rt26a_appown AUTHORIZATION " + app}
	})
	_ = app
	own := rawWith(t, fencetest.WithParam(as(owner), "search_path=public"),
		append([]string{rt26aTbl("accounts")}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	testdb.Exec(t, admin, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(ctx, own, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	// The application role's decoy: a plain table, no row security, a bigint floor.
	rawWith(t, as(app),
		"CREATE TABLE rt26a_appown.fencedsql_floor (id int PRIMARY KEY, floor bigint NOT NULL)",
		"INSERT INTO rt26a_appown.fencedsql_floor VALUES (1, 9223372036854774807)",
		"GRANT USAGE ON SCHEMA rt26a_appown TO PUBLIC",
		"GRANT SELECT ON rt26a_appown.fencedsql_floor TO PUBLIC")
	// Later: the owner guards one more table (fencedsql-schema -apply).
	testdb.Exec(t, own, append([]string{rt26aTbl("ledger")}, g.GuardDDL(dialect.TableName{Name: "ledger"}, "fence_token", "version")...)...)
	var fl int64
	if err := admin.QueryRowContext(ctx, "SELECT floor FROM public.fencedsql_floor").Scan(&fl); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 60), "UPDATE accounts SET balance = 9 WHERE id = 1")
	if fl != 50 || werr != nil {
		t.Errorf("after the owner's guard installation of ledger next to an application role's plain decoy rt26a_appown.fencedsql_floor (floor 2^63-1001): public floor %d (was 50); token 60 on accounts: %v; want floor 50 and the write accepted", fl, rt24cErr(werr))
	}
}

// TestRTrt26aAppOwnedFloorSequenceLowersCopy (fail-open). GuardFloorsQuery's writable
// column checks that the floor *table* is the running role's, but the guards' fast
// path reads the floor's copy, the sequence fencedsql_floor_seq, whose owner is never
// checked. FloorDDL's CREATE SEQUENCE IF NOT EXISTS adopts a sequence an application
// role created first in the installer's schema (public, writable by every role before
// PostgreSQL 15; granted here), and its REVOKE/GRANT only warn. The installation, the
// raise to 50 and its FloorCopier check all succeed; then the application role (the
// sequence's owner) sets the copy to 0 with setval on a raw connection, and a stale
// token 20 writes accounts through the guards' fast path.
//
// Right behaviour: the installation refuses (or the raise refuses with ErrFloorUnsafe)
// a floor sequence not owned by the guards' owner, as it does a floor table of
// another role; the copy can only be lowered with the owner's rights.
func TestRTrt26aAppOwnedFloorSequenceLowersCopy(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin, owner, app, as := rt26aRoles(t, dsn, func(owner, app string) []string {
		return []string{"GRANT CREATE, USAGE ON SCHEMA public TO " + app} // PostgreSQL ≤ 14's default
	})
	appDB := rawWith(t, fencetest.WithParam(as(app), "search_path=public"),
		"CREATE SEQUENCE public.fencedsql_floor_seq MINVALUE 0 START WITH 0",
		"GRANT ALL ON SEQUENCE public.fencedsql_floor_seq TO PUBLIC")
	// The installation refuses a copy another role owns (it could setval it below the
	// floor): nothing is guarded until it is dropped or handed over.
	own := rawWith(t, fencetest.WithParam(as(owner), "search_path=public"))
	var installErr error
	for _, q := range append([]string{rt26aTbl("accounts")}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...) {
		if _, installErr = own.ExecContext(ctx, q); installErr != nil {
			break
		}
	}
	if installErr != nil {
		if !strings.Contains(installErr.Error(), "owned by another role") {
			t.Fatalf("installation over an application-owned floor copy: %v; want its refusal naming the copy's owner", installErr)
		}
		return
	}
	testdb.Exec(t, admin, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	raiseErr := schema.RaiseTokenFloor(ctx, own, postgres.Dialect, 50)
	t.Logf("raise to 50: %v", raiseErr)
	if _, err := appDB.ExecContext(ctx, "SELECT pg_catalog.setval('public.fencedsql_floor_seq', 0, true)"); err != nil {
		t.Fatalf("application role's setval: %v", err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 9 WHERE id = 1")
	if raiseErr == nil && !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("raise to 50 reported success over an application-owned fencedsql_floor_seq; after the app's setval(0), token 20 on accounts: %v; want ErrBelowFloor (or the install/raise refused)", rt24cErr(werr))
	}
}

// TestRTrt26aSuperuserRaiseRefused (over-refusal; regression of 3564e0c). The guards
// and the floor table are installed by a dedicated owner role; after a failover the DBA
// runs the raise (fencedsql-schema -raise-floor) as a superuser, which before 3564e0c
// raised the floor. GuardFloorsQuery's writable column now demands that the floor
// table's owner be CURRENT_USER exactly, so the superuser's raise fails with
// ErrFloorUnsafe although the floor table carries nothing but the library's own sync
// trigger (SECURITY DEFINER, owner-checked): no other role's code would run. The same
// holds for a role that is a member of the owner, and in a database where two roles each
// guard their own schema no role at all can raise.
//
// Right behaviour: the raise refuses only a floor table on which code of another role
// than the raiser would run (a trigger other than the library's sync trigger, a rule,
// row security, a non-library constraint), not one that is merely owned by another role;
// or, at least, accepts a superuser / a member of the owner.
func TestRTrt26aSuperuserRaiseRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin, owner, _, as := rt26aRoles(t, dsn)
	own := rawWith(t, fencetest.WithParam(as(owner), "search_path=public"),
		append([]string{rt26aTbl("accounts")}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	if err := schema.RaiseTokenFloor(ctx, own, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	var super bool
	if err := admin.QueryRowContext(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || !super {
		t.Skipf("set-up: the test DSN's role is not a superuser (%v)", err)
	}
	if err := schema.RaiseTokenFloor(ctx, admin, postgres.Dialect, 60); err != nil {
		t.Errorf("superuser raise to 60 of the floor installed by %s (only the library's sync trigger on it): %v; want it raised", owner, err)
	}
}

// TestRTrt26aForgedGuardBlocksRaise (fail-open through a blocked raise; the rt25a F8
// fix bypassed). GuardFloorsQuery now counts only triggers whose function is named
// fencedsql_guard_% and whose source contains the marker "fencedsql guard v" — both
// plain text that any role can write. An application role that owns a schema creates a
// table with a trigger fencedsql_guard whose function appown.fencedsql_guard_decoy
// carries the marker in a comment and names its own rt26a_appown.fencedsql_floor (a
// plain table it owns). The owner's RaiseTokenFloor then fails with ErrFloorUnsafe
// (the decoy floor is not the raiser's), so the failover hook's raise is refused at
// every retry and the real floor stays at 0: a stale lease (token 20) keeps writing.
//
// Right behaviour: only this library's guards count — a trigger whose function is owned
// by the raising role (or the floor table's owner), on the guarded table of its name,
// as GuardInstalledQuery checks — or a floor table of another role that no genuine guard
// reads is skipped (and reported), not a reason to raise nothing.
func TestRTrt26aForgedGuardBlocksRaise(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	g := postgres.Dialect.(dialect.Guarder)
	admin, owner, app, as := rt26aRoles(t, dsn, func(owner, app string) []string {
		return []string{"CREATE SCHEMA rt26a_appown AUTHORIZATION " + app}
	})
	own := rawWith(t, fencetest.WithParam(as(owner), "search_path=public"),
		append([]string{rt26aTbl("accounts")}, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)...)
	testdb.Exec(t, admin, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	rawWith(t, as(app),
		"CREATE TABLE rt26a_appown.fencedsql_floor (id int PRIMARY KEY, floor bigint NOT NULL)",
		"INSERT INTO rt26a_appown.fencedsql_floor VALUES (1, 0)",
		"CREATE TABLE rt26a_appown.decoy (id int)",
		"CREATE FUNCTION rt26a_appown.fencedsql_guard_decoy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; -- fencedsql guard v9 FROM rt26a_appown.fencedsql_floor f WHERE\n RETURN NEW; END $$",
		"CREATE TRIGGER fencedsql_guard BEFORE INSERT ON rt26a_appown.decoy FOR EACH ROW EXECUTE FUNCTION rt26a_appown.fencedsql_guard_decoy()")
	rerr := schema.RaiseTokenFloor(ctx, own, postgres.Dialect, 50)
	var fl int64
	if err := admin.QueryRowContext(ctx, "SELECT floor FROM public.fencedsql_floor").Scan(&fl); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 9 WHERE id = 1")
	// Decided (an over-refusal kept, loud): a raiser that neither owns nor is a member of
	// the owner of a floor some guard reads refuses the whole raise, naming it, rather
	// than skip a floor (a skipped floor would stay low); the operator drops the forged
	// trigger, or a superuser raises (a clean floor table is written then).
	_ = werr
	if rerr == nil && fl == 50 {
		return
	}
	if !errors.Is(rerr, schema.ErrFloorUnsafe) || !strings.Contains(rerr.Error(), "rt26a_appown.fencedsql_floor") {
		t.Errorf("owner's RaiseTokenFloor(50) with an application role's forged guard: %v; public.fencedsql_floor = %d; want the real floor raised, or ErrFloorUnsafe naming the forged floor", rerr, fl)
	}
}
