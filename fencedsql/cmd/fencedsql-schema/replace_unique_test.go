package main

import (
	"errors"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestLeastPrivilegeReplaceThroughUniqueIndexStaysDeleted (MariaDB; red-team rt37a F1,
// the least-privilege form of dialects/mysql TestReplaceThroughUniqueIndexRecordsDisplacingToken).
// With the layout of design.md §5 applied by `fencedsql-schema -owner -app-role -apply`,
// the application account, on a plain connection and with nothing but the SELECT,
// INSERT, UPDATE, DELETE it is meant to hold, REPLACEs row 5 under token 50 onto the
// e-mail of row 3 (token 10). MariaDB deletes row 3; its tombstone carries the REPLACE's
// token (the REPLACE mark, run as the owner like every guard trigger), so a holder
// older than the deleter (token 30) cannot re-insert key 3: 1048.
func TestLeastPrivilegeReplaceThroughUniqueIndexStaysDeleted(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	dsn := testdb.MySQL(t)
	sfx := randomSuffix(t)
	owner, app, pw := "repl_owner_"+sfx, "repl_app_"+sfx, "pw_"+sfx
	adminDSN, err := gomysql.ParseDSN(admin)
	if err != nil {
		t.Fatal(err)
	}
	adminDSN.DBName = ""
	adb := mustOpen(t, "mysql", adminDSN.FormatDSN())
	for _, s := range []string{
		"CREATE USER '" + owner + "'@'%' ACCOUNT LOCK",
		"CREATE USER '" + app + "'@'%' IDENTIFIED BY '" + pw + "'",
	} {
		if _, err := adb.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	t.Cleanup(func() {
		if _, err := adb.Exec("DROP USER IF EXISTS '" + app + "'@'%', '" + owner + "'@'%'"); err != nil {
			t.Errorf("dropping accounts: %v", err)
		}
	})
	execRaw(t, "mysql", dsn, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, email VARCHAR(40) NULL UNIQUE, amount BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	args := []string{"-driver", "mysql", "-dsn", dsn, "-tables", "ledger", "-owner", owner, "-app-role", app}
	if code, out, errOut := runCmd(t, append(args, "-apply")...); code != exitOK {
		t.Fatalf("-apply: exit %d\n%s\n%s", code, out, errOut)
	}
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = app, pw
	plain := mustOpen(t, "mysql", cfg.FormatDSN())
	for _, q := range []string{
		"INSERT INTO ledger (id, email, amount, fence_token, version) VALUES (3, 'x@example.com', 1, 10, 1)",
		"REPLACE INTO ledger (id, email, amount, fence_token, version) VALUES (5, 'x@example.com', 2, 50, 1)",
	} {
		if _, err := plain.Exec(q); err != nil {
			t.Fatalf("as the application account: %s: %v", q, err)
		}
	}
	_, err = plain.Exec("INSERT INTO ledger (id, amount, fence_token, version) VALUES (3, 666, 30, 1)")
	var n int
	if qerr := plain.QueryRow("SELECT COUNT(*) FROM ledger WHERE id = 3").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1048 || n != 0 {
		t.Fatalf("key 3, deleted by the application account's REPLACE under token 50, came back under token 30 on its plain connection: err = %v, rows = %d; want the tombstone guard's refusal", err, n)
	}
}
