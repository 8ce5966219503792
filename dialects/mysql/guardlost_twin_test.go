package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A red-team pass: lostGuard (dialects/mysql/sidedoor.go) counts a trigger named for the table as
// "on" it when its EVENT_OBJECT_TABLE equals the name case-insensitively
// (strings.EqualFold). Under lower_case_table_names = 0 a swap that renames the old
// table to a case twin (RENAME TABLE accounts TO Accounts, accounts_new TO accounts)
// leaves every guard trigger on `Accounts`, and the new `accounts` without them is
// taken as guarded: schema.Check reports no lost guard, and a fresh pool's guarded
// writes go through although raw writes to the table are unguarded.
func TestGuardLostCaseTwinSwap(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw := testdb.Open(t, "mysql", dsn)
	var lcn int
	if err := raw.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lcn); err != nil {
		t.Fatal(err)
	}
	if lcn != 0 {
		t.Fatal("needs lower_case_table_names = 0 (scripts/servers.sh starts such a server)")
	}
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec("CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1)")
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	exec(reps[0].Fix...)
	exec("CREATE TABLE accounts_new LIKE accounts", "INSERT INTO accounts_new SELECT * FROM accounts",
		"RENAME TABLE accounts TO Accounts, accounts_new TO accounts")
	var onNew int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 'accounts' COLLATE utf8mb4_bin").Scan(&onNew); err != nil {
		t.Fatal(err)
	}
	reps, err = schema.Check(ctx, raw, mysql.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	lost := false
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorGuardLost {
			lost = true
		}
	}
	if !lost {
		t.Errorf("schema.Check after the swap (the new accounts carries %d triggers; the guard's sit on `Accounts`): no guard-lost door", onNew)
	}
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("fresh pool's guarded write to the swapped-in accounts (no guard triggers): %v; want ErrSchema (guard lost)", err)
	}
}
