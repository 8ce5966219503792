package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// TestSetUserReportedMariaDB: MariaDB's SET USER (split from SUPER in 10.5) lets the
// application account create a routine with any DEFINER. With CREATE ROUTINE it makes
// a DEFINER = admin procedure that lowers the token floor, so a stale token writes.
// The check with roles reports SET USER with its REVOKE (red-team rt11f F1b); the
// attack itself is run to show what the report prevents.
func TestSetUserReportedMariaDB(t *testing.T) {
	dsn, args, app, appDSN := leastPrivilegeMariaDB(t)
	adminDB := mustOpen(t, "mysql", dsn)
	var adminAcct string
	if err := adminDB.QueryRow("SELECT CONCAT(QUOTE(SUBSTRING_INDEX(CURRENT_USER(), '@', 1)), '@', QUOTE(SUBSTRING_INDEX(CURRENT_USER(), '@', -1)))").Scan(&adminAcct); err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adminDB.Exec("GRANT SET USER ON *.* TO '" + app + "'@'%'"); err != nil {
		t.Skipf("SET USER (MariaDB 10.5 and later): %v", err)
	}
	execRaw(t, "mysql", dsn, "GRANT CREATE ROUTINE ON `"+cfg.DBName+"`.* TO '"+app+"'@'%'")
	code, out, _ := runCmd(t, args...)
	if code != exitProblems || !strings.Contains(out, "SET USER") || !strings.Contains(out, "REVOKE SET USER ON *.* FROM") {
		t.Errorf("check with roles, %s holding SET USER and CREATE ROUTINE: exit %d, want %d with SET USER reported and revoked:\n%s", app, code, exitProblems, out)
	}

	// What it prevents: a DEFINER procedure lowers the floor.
	bg := context.Background()
	fenced := mustOpen(t, "fenced-mysql", appDSN+"&fenced_tables=ledger")
	if _, err := fenced.ExecContext(fencedsql.WithToken(bg, 5), "INSERT INTO ledger (id, amount) VALUES (?, ?)", 1, 10); err != nil {
		t.Fatalf("fenced INSERT: %v", err)
	}
	if err := schema.RaiseTokenFloor(bg, adminDB, mysql.Dialect, 100); err != nil {
		t.Fatalf("RaiseTokenFloor: %v", err)
	}
	plain := mustOpen(t, "mysql", appDSN)
	for _, s := range []string{
		"CREATE DEFINER = " + adminAcct + " PROCEDURE lower_floor() SQL SECURITY DEFINER UPDATE fencedsql_floor SET floor = 0",
		"CALL lower_floor()",
	} {
		if _, err := plain.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(bg, 50), "UPDATE ledger SET amount = 2 WHERE id = ?", 1); err != nil && !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("after the floor was lowered: %v", err)
	}

	// -apply revokes it; the check then passes again.
	execRaw(t, "mysql", dsn, "DROP PROCEDURE lower_floor", "REVOKE CREATE ROUTINE ON `"+cfg.DBName+"`.* FROM '"+app+"'@'%'")
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := runCmd(t, args...); code != exitOK {
		t.Errorf("check after -apply: exit %d\n%s", code, out)
	}
}

// TestTriggerBypassPrivilegesReportedMariaDB: BINLOG REPLAY (row events fire no
// trigger), BINLOG ADMIN (SET sql_log_bin = 0) and ALTER ROUTINE on the guards'
// database (it drops the fence function) are reported with their REVOKE, which
// -apply runs (red-team rt11f F1b).
func TestTriggerBypassPrivilegesReportedMariaDB(t *testing.T) {
	dsn, args, app, _ := leastPrivilegeMariaDB(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	adminDB := mustOpen(t, "mysql", dsn)
	if _, err := adminDB.Exec("GRANT BINLOG REPLAY, BINLOG ADMIN ON *.* TO '" + app + "'@'%'"); err != nil {
		t.Skipf("BINLOG REPLAY (MariaDB 10.5 and later): %v", err)
	}
	execRaw(t, "mysql", dsn, "GRANT ALTER ROUTINE ON `"+cfg.DBName+"`.* TO '"+app+"'@'%'")
	code, out, _ := runCmd(t, args...)
	for _, want := range []string{"REVOKE BINLOG REPLAY, BINLOG ADMIN ON *.* FROM", "REVOKE ALTER ROUTINE ON `" + cfg.DBName + "`.* FROM"} {
		if code != exitProblems || !strings.Contains(out, want) {
			t.Errorf("check with roles: exit %d, want %d with %q:\n%s", code, exitProblems, want, out)
		}
	}
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
}
