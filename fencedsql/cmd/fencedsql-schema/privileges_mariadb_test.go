package main

import (
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// leastPrivilegeMariaDB makes a database holding ledger, an owner and an application
// account, applies the least-privilege layout (fencedsql-schema -owner -app-role
// -apply), and returns the admin DSN of the database, the check's arguments, the
// application account's name and its DSN. Everything is dropped in t.Cleanup.
func leastPrivilegeMariaDB(t *testing.T) (dsn string, args []string, app, appDSN string) {
	t.Helper()
	admin := testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	dsn = testdb.MySQL(t)
	sfx := randomSuffix(t)
	owner, pw := "fsql_owner_"+sfx, "pw_"+sfx
	app = "fsql_app_" + sfx
	cfg, err := gomysql.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = ""
	adb := testdb.Open(t, "mysql", cfg.FormatDSN(),
		"CREATE USER '"+owner+"'@'%' ACCOUNT LOCK",
		"CREATE USER '"+app+"'@'%' IDENTIFIED BY '"+pw+"'")
	t.Cleanup(func() {
		if _, err := adb.Exec("DROP USER IF EXISTS '" + app + "'@'%', '" + owner + "'@'%'"); err != nil {
			t.Errorf("dropping accounts: %v", err)
		}
	})
	execRaw(t, "mysql", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL) ENGINE=InnoDB")
	args = []string{"-driver", "mysql", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	c, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c.User, c.Passwd = app, pw
	return dsn, args, app, c.FormatDSN()
}

// TestPublicGrantsReportedMariaDB: MariaDB 10.11's GRANT … TO PUBLIC gives every
// account the rights, the application's included. PrivilegeProblems reads PUBLIC's
// grants as the application's own: a database-wide write (which reaches the tombstone
// and floor tables), TRIGGER on the guarded table and a write on the tombstone table
// are reported, the last two with REVOKE … FROM PUBLIC, which -apply runs (red-team
// rt10t F3).
func TestPublicGrantsReportedMariaDB(t *testing.T) {
	dsn, args, _, appDSN := leastPrivilegeMariaDB(t)
	db, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	adminDB := testdb.Open(t, "mysql", dsn)
	if _, err := adminDB.Exec("GRANT TRIGGER ON ledger TO PUBLIC"); err != nil {
		t.Skipf("GRANT … TO PUBLIC (MariaDB 10.11 and later): %v", err)
	}
	testdb.Exec(t, adminDB,
		"GRANT UPDATE ON fencedsql_tomb_ledger TO PUBLIC",
		"GRANT INSERT, UPDATE, DELETE ON `"+db.DBName+"`.* TO PUBLIC")
	t.Cleanup(func() {
		// PUBLIC's grants outlive the database: revoke them all.
		for _, q := range []string{
			"REVOKE ALL PRIVILEGES ON `" + db.DBName + "`.`ledger` FROM PUBLIC",
			"REVOKE ALL PRIVILEGES ON `" + db.DBName + "`.`fencedsql_tomb_ledger` FROM PUBLIC",
			"REVOKE INSERT, UPDATE, DELETE ON `" + db.DBName + "`.* FROM PUBLIC",
		} {
			adminDB.Exec(q) // some were revoked by -apply already
		}
	})
	code, out, _ := runCmd(t, args...)
	if code != exitProblems {
		t.Fatalf("grants to PUBLIC: exit %d, want problems\n%s", code, out)
	}
	wantContains(t, "grants to PUBLIC", out,
		"PUBLIC (every account) has TRIGGER on", "PUBLIC (every account) has UPDATE on the tombstone table",
		"PUBLIC (every account) has INSERT, UPDATE, DELETE on database")
	code, out, _ = runCmd(t, append(args, "-apply")...)
	after := out[strings.Index(out, "now:"):]
	if code != exitProblems || strings.Contains(after, "has TRIGGER") || strings.Contains(after, "on the tombstone table") || !strings.Contains(after, "PUBLIC (every account) has INSERT, UPDATE, DELETE on database") {
		t.Errorf("-apply: exit %d, want the table grants revoked from PUBLIC and the database-wide write still reported\n%s", code, out)
	}
	testdb.Exec(t, adminDB, "REVOKE INSERT, UPDATE, DELETE ON `"+db.DBName+"`.* FROM PUBLIC")
	if code, out, _ := runCmd(t, args...); code != exitOK {
		t.Errorf("after revoking from PUBLIC: exit %d\n%s", code, out)
	}
	plain := testdb.Open(t, "mysql", appDSN)
	refused(t, plain, "UPDATE fencedsql_tomb_ledger SET fence_token = 0", "DROP TRIGGER fencedsql_guard_ledger")
}

// TestColumnGrantsReportedMariaDB: a column-level write on the tombstone table or the
// token floor (UPDATE (fence_token), UPDATE (floor)), to the application or to PUBLIC,
// lets it disarm tombstones or lower the floor; PrivilegeProblems reads
// information_schema.COLUMN_PRIVILEGES and reports it with a REVOKE, which -apply
// runs (red-team rt10t F4, MariaDB rows).
func TestColumnGrantsReportedMariaDB(t *testing.T) {
	for _, c := range []struct{ grant, use, want string }{
		{"GRANT UPDATE (fence_token) ON fencedsql_tomb_ledger TO %s", "UPDATE fencedsql_tomb_ledger SET fence_token = 0", "has UPDATE (fence_token) on the tombstone table"},
		{"GRANT UPDATE (floor) ON fencedsql_floor TO %s", "UPDATE fencedsql_floor SET floor = 0", "has UPDATE (floor) on the token floor"},
		{"GRANT INSERT (id, fence_token, deleted_at) ON fencedsql_tomb_ledger TO %s", "INSERT INTO fencedsql_tomb_ledger (id, fence_token, deleted_at) VALUES (7, 0, NOW())", "has INSERT (deleted_at, fence_token, id) on the tombstone table"},
	} {
		for _, to := range []string{"app", "PUBLIC"} {
			t.Run(to+"/"+c.grant[:strings.Index(c.grant, " TO ")], func(t *testing.T) {
				dsn, args, app, appDSN := leastPrivilegeMariaDB(t)
				grantee := "'" + app + "'@'%'"
				who := "application account " + app + "@%"
				if to == "PUBLIC" {
					grantee, who = "PUBLIC", "PUBLIC (every account)"
				}
				adminDB := testdb.Open(t, "mysql", dsn)
				grant := fmt.Sprintf(c.grant, grantee)
				if _, err := adminDB.Exec(grant); err != nil {
					t.Skipf("%s: %v", grant, err)
				}
				if to == "PUBLIC" {
					table := strings.Fields(c.grant[strings.Index(c.grant, " ON ")+4:])[0]
					t.Cleanup(func() { adminDB.Exec("REVOKE ALL PRIVILEGES ON " + table + " FROM PUBLIC") })
				}
				code, out, _ := runCmd(t, args...)
				if code != exitProblems || !strings.Contains(out, who+" "+c.want) {
					t.Fatalf("after %q: exit %d, want %q\n%s", grant, code, who+" "+c.want, out)
				}
				if code, out, _ := runCmd(t, append(args, "-apply")...); code != exitOK {
					t.Errorf("-apply: exit %d\n%s", code, out)
				}
				refused(t, testdb.Open(t, "mysql", appDSN), c.use)
			})
		}
	}
}
