package mysql_test

import (
	"context"
	"errors"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A table of another database (shop.accounts) registered and guarded through the
// application's database (home) after home's floor was raised gets a floor table that
// starts at home's floor, not 0: since rt37c F3 it belongs to home's application, and
// a lease refused by home's floor must not write it (red-team rt42c F1; PostgreSQL:
// TestFloorNewTableStartsAtHighest).
func TestFloorOtherDatabaseStartsAtConnectionFloor(t *testing.T) {
	ctx := context.Background()
	dsnHome, dsnShop := testdb.MySQL(t), testdb.MySQL(t)
	cfg, err := gomysql.ParseDSN(dsnShop)
	if err != nil {
		t.Fatal(err)
	}
	shop := cfg.DBName
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	rawHome := testdb.Open(t, "mysql", dsnHome, accounts)
	testdb.Open(t, "mysql", dsnShop, accounts)
	install := func(specs ...schema.GuardSpec) {
		t.Helper()
		if err := schema.RegisterTables(ctx, rawHome, mysql.Dialect, specs...); err != nil {
			t.Fatal(err)
		}
		fencetest.Guard(t, ctx, rawHome, mysql.Dialect, specs...)
	}
	install(schema.GuardSpec{Table: "accounts"})
	// The failover hook (or a lock-service switch) raises home's floor; later a release
	// guards a table of another database, registered in home.
	if err := schema.RaiseTokenFloor(ctx, rawHome, mysql.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	install(schema.GuardSpec{Table: "accounts"}, schema.GuardSpec{Table: shop + ".accounts"})
	var f int64
	if err := rawHome.QueryRowContext(ctx, "SELECT floor FROM `"+shop+"`.fencedsql_floor WHERE id = 1").Scan(&f); err != nil || f != 1000 {
		t.Errorf("%s's floor installed at %d, %v; want home's 1000", shop, f, err)
	}
	app := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsnHome, "fenced_tables=accounts,"+shop+".accounts"))
	_, err = app.ExecContext(fencedsql.WithToken(ctx, 500), "INSERT INTO "+shop+".accounts (id, balance) VALUES (1, 0)")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("INSERT into %s.accounts (registered in home, whose floor is 1000) under token 500: %v; want ErrBelowFloor", shop, err)
	}
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 1000), "INSERT INTO "+shop+".accounts (id, balance) VALUES (1, 0)"); err != nil {
		t.Errorf("INSERT under the floor's token 1000: %v", err)
	}
}
