package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// pgRoles makes an owner role and an application login role for one test and a
// database of its own, and returns the database's admin DSN, the two role names and
// the application's DSN. The roles are dropped after the database.
func pgRoles(t *testing.T) (dsn, owner, app, appDSN string) {
	t.Helper()
	admin := testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	sfx := randomSuffix(t)
	owner, app, pw := "fsql_owner_"+sfx, "fsql_app_"+sfx, "pw_"+sfx
	adb := mustOpen(t, "pgx", admin)
	for _, s := range []string{`CREATE ROLE ` + owner + ` NOLOGIN`, `CREATE ROLE ` + app + ` LOGIN PASSWORD '` + pw + `'`} {
		if _, err := adb.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	// Registered before the database: runs after it was dropped.
	t.Cleanup(func() {
		if _, err := adb.Exec(`DROP ROLE IF EXISTS ` + app + `, ` + owner); err != nil {
			t.Errorf("dropping roles: %v", err)
		}
	})
	dsn = testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("the test needs a URL DSN in %s: %v", testdb.EnvPostgres, err)
	}
	u.User = url.UserPassword(app, pw)
	return dsn, owner, app, u.String()
}

// The floor's sync function (fencedsql_floor_sync, SECURITY DEFINER) cannot be
// attached by the application role to a table of its own in the guards' schema (one it
// owns, or one it was granted TRIGGER on): EXECUTE on it is not PUBLIC's, and it acts
// only as the floor table's own trigger. A red-team pass attached it to such a table,
// set the floor's copy to 0 and wrote under a token below the floor through the guard's
// fast path.
func TestFloorSyncNotAttachableByApp(t *testing.T) {
	for _, how := range []string{"OWNER", "TRIGGER"} {
		t.Run(how, func(t *testing.T) {
			dsn, owner, app, appDSN := pgRoles(t)
			grant := "ALTER TABLE notes OWNER TO " + app
			if how == "TRIGGER" {
				grant = "GRANT TRIGGER, INSERT ON notes TO " + app
			}
			execRaw(t, "pgx", dsn,
				"CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)",
				"CREATE TABLE notes (id int PRIMARY KEY DEFAULT 1, floor bigint)",
				grant)
			args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
			if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
				t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
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
			_, err := plain.Exec("CREATE TRIGGER forged AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION fencedsql_floor_sync()")
			if err == nil {
				_, err = plain.Exec("INSERT INTO notes (floor) VALUES (0)")
			}
			if err == nil {
				t.Error("the application role attached fencedsql_floor_sync() to a table of its own and fired it")
			}
			var copyVal int64
			if err := adminDB.QueryRow("SELECT pg_catalog.pg_sequence_last_value('fencedsql_floor_seq'::regclass)").Scan(&copyVal); err != nil || copyVal != 100 {
				t.Errorf("the floor's copy: %d, %v; want 100", copyVal, err)
			}
			if _, err := fenced.ExecContext(fencedsql.WithToken(bg, 50), "UPDATE ledger SET amount = 2 WHERE id = $1", 1); !errors.Is(err, fencedsql.ErrBelowFloor) {
				t.Errorf("UPDATE under token 50, floor 100: %v, want ErrBelowFloor", err)
			}
		})
	}
}

// Rights that let the application role change the tombstones or the floor are
// reported by the check with roles, and -apply takes them back: rights on the floor
// table (a deleted floor row is no floor), on the floor's copy (setval lowers it), on
// the sync function, and column rights on the tombstone and floor tables (which
// has_table_privilege does not see). A red-team pass used each one on a plain
// connection while the check printed "ledger: OK".
func TestPrivilegeProblemsFloorAndColumnGrants(t *testing.T) {
	for _, c := range []struct{ grant, use, want string }{
		{"GRANT UPDATE (fence_token) ON fencedsql_tomb_ledger TO %s", "UPDATE fencedsql_tomb_ledger SET fence_token = 0", "UPDATE on the tombstone table"},
		{"GRANT UPDATE, DELETE ON fencedsql_floor TO %s", "DELETE FROM fencedsql_floor", "UPDATE, DELETE on the token floor table"},
		{"GRANT UPDATE (floor) ON fencedsql_floor TO %s", "UPDATE fencedsql_floor SET floor = 0", "UPDATE on the token floor table"},
		{"GRANT UPDATE ON SEQUENCE fencedsql_floor_seq TO %s", "SELECT setval('fencedsql_floor_seq', 1)", "UPDATE on the token floor's copy"},
		{"GRANT USAGE ON SEQUENCE fencedsql_floor_seq TO %s", "SELECT nextval('fencedsql_floor_seq')", "USAGE on the token floor's copy"},
		{"GRANT EXECUTE ON FUNCTION fencedsql_floor_sync() TO %s", "", "EXECUTE on fencedsql_floor_sync()"},
	} {
		t.Run(c.grant[:strings.Index(c.grant, " TO ")], func(t *testing.T) {
			dsn, owner, app, appDSN := pgRoles(t)
			execRaw(t, "pgx", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)")
			args := []string{"-driver", "postgres", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
			if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
				t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
			}
			execRaw(t, "pgx", dsn, fmt.Sprintf(c.grant, app))
			code, out, _ := runCmd(t, args...)
			if code != exitProblems {
				t.Fatalf("after %q: exit %d, want %d (problems)\n%s", fmt.Sprintf(c.grant, app), code, exitProblems, out)
			}
			wantContains(t, "check", out, c.want)
			if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
				t.Fatalf("-apply after the grant: exit %d\n%s\n%s", code, out, errOut)
			}
			if c.use != "" {
				plain := mustOpen(t, "pgx", appDSN)
				if _, err := plain.Exec(c.use); err == nil {
					t.Errorf("after -apply the application role still ran %q", c.use)
				}
			}
		})
	}
}
