package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The survivors of a swap (the fence function, the tombstone table) are evidence of a
// lost guard only for an account that would see the table's triggers: MariaDB lists
// the names of the triggers of tables the account may write (INSERT, UPDATE, DELETE),
// MySQL those it has TRIGGER on. An application account of the table-by-table layout
// (the database's SELECT and EXECUTE, DML on accounts only) sees the table's triggers
// and is not refused while the guard is intact; after a swap that keeps the old table
// (whose triggers it cannot see) it is refused by the survivors, with ErrSchema.
func TestGuardLostApplicationAccount(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn)
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	exec(accounts, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1), (2, 100, 5, 1)")
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	exec(reps[0].Fix...)
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	var db string
	if err := raw.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	user, pw := "swp_app_"+hex.EncodeToString(rnd[:]), "pw_"+hex.EncodeToString(rnd[:])
	exec("CREATE USER '"+user+"'@'%' IDENTIFIED BY '"+pw+"'",
		"GRANT SELECT, EXECUTE ON `"+db+"`.* TO '"+user+"'@'%'",
		"GRANT INSERT, UPDATE, DELETE ON `"+db+"`.accounts TO '"+user+"'@'%'")
	t.Cleanup(func() { raw.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, pw
	appDSN := cfg.FormatDSN()
	open := func() *sql.DB {
		p := testdb.Open(t, "fenced-mysql", fencetest.WithParam(appDSN, "fenced_tables=accounts"))
		return p
	}
	count := func(p *sql.DB, q string, args ...any) int {
		t.Helper()
		var n int
		if err := p.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	app := open()
	if n := count(app, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'fencedsql_tomb_accounts'"); n != 1 {
		t.Fatalf("the account sees %d tombstone tables, want 1 (the evidence is visible)", n)
	}
	triggers := func() int {
		return count(app, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'fencedsql%'")
	}
	if n := triggers(); n != 6 {
		t.Fatalf("the account sees %d of the 6 triggers of accounts, want all (MariaDB shows them to a writer)", n)
	}
	upd := "UPDATE accounts SET balance = ? WHERE id = ?"
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 10), upd, 1, 1); err != nil {
		t.Fatalf("intact guard: %v", err)
	}
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM accounts WHERE id = ?", 2); err != nil {
		t.Fatal(err)
	}

	// pt-online-schema-change's swap, the old table kept: the account sees none of
	// the triggers now (they sit on _accounts_old), only the survivors.
	exec(strings.Replace(accounts, "accounts", "_accounts_new", 1), "INSERT INTO _accounts_new SELECT * FROM accounts",
		"RENAME TABLE accounts TO _accounts_old, _accounts_new TO accounts")
	if n := triggers(); n != 0 {
		t.Fatalf("after the swap the account sees %d triggers, want 0", n)
	}
	_, err = open().ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, balance) VALUES (?, ?)", 2, 1)
	var se *fencedsql.SchemaError
	if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "accounts" || !strings.Contains(err.Error(), string(dialect.SideDoorGuardLost)) {
		t.Fatalf("stale re-insert after the swap: err = %v, want ErrSchema (guard lost)", err)
	}
	if n := count(raw, "SELECT COUNT(*) FROM accounts WHERE id = 2"); n != 0 {
		t.Fatal("the stale re-insert wrote the deleted key")
	}
}
