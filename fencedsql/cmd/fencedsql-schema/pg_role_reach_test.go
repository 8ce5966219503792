package main

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// PostgreSQL role membership and role attributes that hand the guards to the
// application (red-team rt11f F1, F2).

// memberRoles: an owner role, a NOINHERIT application login role, and a group role
// the application is a member of (prefixed mbr_), and a database of the test's own.
func memberRoles(t *testing.T) (dsn, owner, app, group, appDSN string) {
	t.Helper()
	admin := testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	sfx := randomSuffix(t)
	owner, app, group, pw := "mbr_owner_"+sfx, "mbr_app_"+sfx, "mbr_grp_"+sfx, "pw_"+sfx
	adb := mustOpen(t, "pgx", admin)
	for _, s := range []string{
		`CREATE ROLE ` + owner + ` NOLOGIN`,
		`CREATE ROLE ` + group + ` NOLOGIN`,
		// NOINHERIT: the group's rights are not the application's until it runs
		// SET ROLE, which any member may do.
		`CREATE ROLE ` + app + ` LOGIN NOINHERIT PASSWORD '` + pw + `'`,
		`GRANT ` + group + ` TO ` + app,
	} {
		if _, err := adb.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if _, err := adb.Exec(`DROP ROLE IF EXISTS ` + app + `, ` + group + `, ` + owner); err != nil {
			t.Errorf("dropping roles: %v", err)
		}
	})
	dsn = testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("the test needs a URL DSN: %v", err)
	}
	u.User = url.UserPassword(app, pw)
	return dsn, owner, app, group, u.String()
}

// Rights that reach the application role through a NOINHERIT membership are
// invisible to has_table_privilege(app, …), yet the application takes them with SET
// ROLE on a plain connection (red-team rt11f F2: it lowered the token floor through
// UPDATE granted to its group while the check printed "ledger: OK"). The check asks
// every role the application is a member of: it reports the group's right, -apply
// revokes it from the group, and the application's SET ROLE then lowers nothing.
func TestPrivilegesSeeNoInheritMembership(t *testing.T) {
	dsn, owner, app, group, appDSN := memberRoles(t)
	execRaw(t, "pgx", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)")
	args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	execRaw(t, "pgx", dsn, "GRANT UPDATE ON fencedsql_floor TO "+group)
	code, out, _ := runCmd(t, args...)
	if code != exitProblems {
		t.Fatalf("check with roles: exit %d, want %d (problems): %s (NOINHERIT) can SET ROLE %s, which has UPDATE on fencedsql_floor:\n%s", code, exitProblems, app, group, out)
	}
	wantContains(t, "check", out, "through "+group, "UPDATE on the token floor table", `FROM "`+app+`", "`+group+`", PUBLIC`)
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply after the grant: exit %d\n%s\n%s", code, out, errOut)
	}

	bg := context.Background()
	fenced := mustOpen(t, "fenced-pgx", appDSN+"&fenced_tables=ledger")
	if _, err := fenced.ExecContext(fencedsql.WithToken(bg, 5), "INSERT INTO ledger (id, amount) VALUES ($1, $2)", 1, 10); err != nil {
		t.Fatalf("fenced INSERT: %v", err)
	}
	adminDB := mustOpen(t, "pgx", dsn)
	if err := schema.RaiseTokenFloor(bg, adminDB, postgres.Dialect, 100); err != nil {
		t.Fatalf("RaiseTokenFloor: %v", err)
	}
	plain := mustOpen(t, "pgx", appDSN)
	plain.SetMaxOpenConns(1)
	if _, err := plain.Exec("SET ROLE " + group); err != nil {
		t.Fatalf("SET ROLE: %v", err)
	}
	if _, err := plain.Exec("UPDATE fencedsql_floor SET floor = 0"); err == nil {
		t.Errorf("after -apply the application still lowered the floor through its membership in %s", group)
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(bg, 50), "UPDATE ledger SET amount = 2 WHERE id = $1", 1); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("UPDATE under token 50, floor 100: %v, want ErrBelowFloor", err)
	}
}

// An application role with CREATEROLE can, on PostgreSQL 15 and before, grant itself
// membership in the guards' owner role, SET ROLE to it and disable the guard's
// triggers (red-team rt11f F1: the check read rolsuper only and printed "ledger: OK").
// The check reports CREATEROLE with ALTER ROLE … NOCREATEROLE, and after -apply the
// application can no longer take the owner role.
func TestPrivilegesReportCreateRole(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	sfx := randomSuffix(t)
	owner, app, pw := "mbr_owner_"+sfx, "mbr_app_"+sfx, "pw_"+sfx
	adb := mustOpen(t, "pgx", admin)
	for _, s := range []string{`CREATE ROLE ` + owner + ` NOLOGIN`, `CREATE ROLE ` + app + ` LOGIN CREATEROLE PASSWORD '` + pw + `'`} {
		if _, err := adb.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if _, err := adb.Exec(`DROP ROLE IF EXISTS ` + app + `, ` + owner); err != nil {
			t.Errorf("dropping roles: %v", err)
		}
	})
	dsn := testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(app, pw)
	appDSN := u.String()

	execRaw(t, "pgx", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)")
	args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
	code, out, _ := runCmd(t, args...)
	if code != exitProblems {
		t.Fatalf("check with roles: exit %d, want %d (problems)\n%s", code, exitProblems, out)
	}
	wantContains(t, "check", out, "application role "+app+" has CREATEROLE", `ALTER ROLE "`+app+`" NOCREATEROLE`)
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	plain := mustOpen(t, "pgx", appDSN)
	if _, err := plain.Exec("GRANT " + owner + " TO " + app); err == nil {
		t.Errorf("after -apply the application role still granted itself the owner role %s", owner)
	}
}
