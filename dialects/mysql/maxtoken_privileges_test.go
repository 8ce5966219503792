package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// maxTokenAccounts creates accounts, runs setup (its rows), registers and guards it,
// and returns the admin connection and its DSN.
func maxTokenAccounts(t *testing.T, ctx context.Context, setup ...string) (*sql.DB, string) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, append([]string{"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"}, setup...)...)
	spec := schema.GuardSpec{Table: "accounts"}
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, mysql.Dialect, spec)
	return raw, dsn
}

// row10 is a row of accounts written under token 10.
const row10 = "INSERT INTO accounts VALUES (1, 0, 10, 1)"

// limitedAccount creates an account of the test (dropped at its end) with grants, each
// "<privileges> ON <object>" with DB standing for the test's database, and returns its
// DSN.
func limitedAccount(t *testing.T, raw *sql.DB, dsn, prefix string, grants ...string) string {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	user := prefix + cfg.DBName[len(cfg.DBName)-8:]
	if _, err := raw.Exec("CREATE USER '" + user + "'@'127.0.0.1' IDENTIFIED BY 'limited-pw'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Exec("DROP USER IF EXISTS '" + user + "'@'127.0.0.1'") })
	for _, g := range grants {
		g = "GRANT " + replaceDB(g, "`"+cfg.DBName+"`") + " TO '" + user + "'@'127.0.0.1'"
		if _, err := raw.Exec(g); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
	}
	cfg.User, cfg.Passwd = user, "limited-pw"
	return cfg.FormatDSN()
}

func replaceDB(s, db string) string {
	out := ""
	for i := 0; i < len(s); i++ {
		if i+2 <= len(s) && s[i:i+2] == "DB" {
			out += db
			i++
			continue
		}
		out += string(s[i])
	}
	return out
}

// MaxToken run by an account that sees every row but not the guards' triggers (no
// TRIGGER privilege, which a least-privilege operator lacks) fails with a
// *MaxTokenPrivilegeError naming TRIGGER when it lists the tables itself — it would
// miss the floor's guards and every table guarded without a registry row — and reads
// the floor by name when the tables are named (red-team rt42c F4).
func TestMaxTokenWithoutTriggerPrivilege(t *testing.T) {
	ctx := context.Background()
	raw, dsn := maxTokenAccounts(t, ctx, row10)
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(ctx, raw, mysql.Dialect); err != nil || m != 999 {
		t.Fatalf("setup: MaxToken as admin = %d, %v; want 999", m, err)
	}
	ro := testdb.Open(t, "mysql", limitedAccount(t, raw, dsn, "mt_ro_", "SELECT ON DB.*", "SLAVE MONITOR ON *.*"))
	m, err := schema.MaxToken(ctx, ro, mysql.Dialect)
	var pe *schema.MaxTokenPrivilegeError
	if !errors.As(err, &pe) || pe.Privilege != "TRIGGER" {
		t.Errorf("MaxToken (no tables) by an account without TRIGGER = %d, %v; want a *MaxTokenPrivilegeError naming TRIGGER", m, err)
	}
	if m, err := schema.MaxToken(ctx, ro, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || m != 999 {
		t.Errorf("MaxToken(accounts) by an account without TRIGGER = %d, %v; want 999 (the floor read by name)", m, err)
	}
}

// MaxToken run by an account granted SELECT on the guarded table (and the registry)
// but not on the guards' own tables — information_schema then lists neither the floor
// nor the tombstone table to it — fails with a *MaxTokenPrivilegeError instead of
// missing the token of a row deleted under 500 (red-team rt42c F4): the floor table
// first, and with SELECT on the floor, the table's tombstone table.
func TestMaxTokenWithoutGuardTablePrivilege(t *testing.T) {
	ctx := context.Background()
	raw, dsn := maxTokenAccounts(t, ctx, row10)
	app := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, 0)"); err != nil {
		t.Fatal(err)
	}
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 500), "DELETE FROM accounts WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(ctx, raw, mysql.Dialect); err != nil || m != 500 {
		t.Fatalf("setup: MaxToken as admin = %d, %v; want 500", m, err)
	}
	ro := testdb.Open(t, "mysql", limitedAccount(t, raw, dsn, "mt_rt_", "SELECT ON DB.accounts", "SELECT ON DB.fencedsql_registry", "SLAVE MONITOR ON *.*"))
	var pe *schema.MaxTokenPrivilegeError
	if m, err := schema.MaxToken(ctx, ro, mysql.Dialect); !errors.As(err, &pe) {
		t.Errorf("MaxToken by an account that may read accounts but not the guards' tables = %d, %v; want a *MaxTokenPrivilegeError", m, err)
	}
	ro2 := testdb.Open(t, "mysql", limitedAccount(t, raw, dsn, "mt_fl_", "SELECT ON DB.accounts", "SELECT ON DB.fencedsql_floor", "SLAVE MONITOR ON *.*"))
	m, err := schema.MaxToken(ctx, ro2, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if !errors.As(err, &pe) || pe.Privilege != "SELECT" {
		t.Errorf("MaxToken(accounts) by an account that may read accounts and the floor but not its tombstone table = %d, %v; want a *MaxTokenPrivilegeError naming the tombstone table", m, err)
	}
}

// WithTokenSource's regression check runs schema.MaxToken through the application's
// own account, which on MySQL/MariaDB has no TRIGGER privilege by design: the table is
// named, so MaxToken reads the floor by name and the lock service behind the floor is
// reported (*TokenRegressionError), as on SQLite (red-team rt42c F5). The table has
// no row: only the floor puts the database ahead of the fresh service.
func TestBelowFloorExplainedForLeastPrivilegeApp(t *testing.T) {
	ctx := context.Background()
	raw, dsn := maxTokenAccounts(t, ctx)
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	appDSN := limitedAccount(t, raw, dsn, "mt_app_", "SELECT, INSERT, UPDATE, DELETE, EXECUTE ON DB.*")
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(10*time.Second))
	defer locks.Close(context.Background())
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, appDSN), fencedsql.WithDialect(mysql.Dialect),
		fencedsql.Guard("accounts"), fencedsql.WithTokenSource(locks))
	defer db.Close()
	lease, err := locks.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	_, err = db.ExecContext(fencedsql.WithLease(ctx, lease), "INSERT INTO accounts (id, balance) VALUES (2, 5)")
	if !errors.Is(err, fencedsql.ErrBelowFloor) || !errors.Is(err, fencedsql.ErrTokenRegression) {
		t.Fatalf("write under token %d (the lock service's last) below the floor 1000 through a least-privilege account: %v; want a *TokenRegressionError wrapping the *BelowFloorError", lease.Token(), err)
	}
}
