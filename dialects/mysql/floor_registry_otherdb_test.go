package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseCoversRegisteredTableOfOtherDatabase (red-team rt37c F3, G14 "The floor
// covers every guarded table, or the floor tools say which it does not"): the
// application's database home registers (and its fenced pool writes) home's accounts
// and shop.accounts, a table of another database on the same server, whose guard's
// triggers read shop's floor table. The failover hook runs the raise with the
// application's DSN (home): it raised home's floor only, yet counted shop.accounts as
// covered because it carries a guard, returned nil, and a write to shop.accounts under
// a token below the floor went through.
//
// Now the raise takes in the floor of every database the registry's tables are
// qualified with: both floors are raised in its one transaction, TokenFloors lists
// both, and the stale write to shop.accounts is refused. An account that cannot see
// shop's guards (so cannot raise its floor) gets ErrFloorUncovered naming
// shop.accounts, from the raise and from TokenFloor, and shop's floor is left as it
// was.
func TestRaiseCoversRegisteredTableOfOtherDatabase(t *testing.T) {
	ctx := context.Background()
	dsnHome, dsnShop := testdb.MySQL(t), testdb.MySQL(t)
	dbName := func(dsn string) string {
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.DBName
	}
	home, shop := dbName(dsnHome), dbName(dsnShop)
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	rawHome := testdb.Open(t, "mysql", dsnHome, accounts)
	testdb.Open(t, "mysql", dsnShop, accounts)
	specs := []schema.GuardSpec{{Table: "accounts"}, {Table: shop + ".accounts"}}
	if err := schema.RegisterTables(ctx, rawHome, mysql.Dialect, specs...); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, rawHome, mysql.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, s := range r.Fix {
			if _, err := rawHome.ExecContext(ctx, s); err != nil {
				t.Fatalf("%v\n%s", err, s)
			}
		}
	}
	app := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsnHome, "fenced_tables=accounts,"+shop+".accounts"))
	for _, q := range []string{"INSERT INTO accounts (id, balance) VALUES (1, 0)", "INSERT INTO " + shop + ".accounts (id, balance) VALUES (1, 0)"} {
		if _, err := app.ExecContext(fencedsql.WithToken(ctx, 100), q); err != nil {
			t.Fatalf("setup %s: %v", q, err)
		}
	}
	floorOf := func(db string) int64 {
		t.Helper()
		var f int64
		if err := rawHome.QueryRowContext(ctx, "SELECT floor FROM `"+db+"`.fencedsql_floor WHERE id = 1").Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}

	// The hook after a failover: fencedsql-schema -driver mysql -dsn <home> -raise-floor 1000.
	if err := schema.RaiseTokenFloor(ctx, rawHome, mysql.Dialect, 1000); err != nil {
		t.Fatalf("RaiseTokenFloor(home, 1000): %v", err)
	}
	if floorOf(home) != 1000 || floorOf(shop) != 1000 {
		t.Fatalf("floors after the raise through home: home %d, shop %d; want both 1000 (shop.accounts is registered in home)", floorOf(home), floorOf(shop))
	}
	want := []schema.Floor{{Table: home + ".fencedsql_floor", Floor: 1000}, {Table: shop + ".fencedsql_floor", Floor: 1000}}
	slices.SortFunc(want, func(a, b schema.Floor) int { return strings.Compare(a.Table, b.Table) })
	if fl, err := schema.TokenFloors(ctx, rawHome, mysql.Dialect); err != nil || !slices.Equal(fl, want) {
		t.Fatalf("TokenFloors through home = %+v, %v; want %+v", fl, err, want)
	}
	// A lease granted before the failover (token 500) writes neither table.
	for _, q := range []string{"UPDATE accounts SET balance = 1 WHERE id = 1", "UPDATE " + shop + ".accounts SET balance = 1 WHERE id = 1"} {
		if _, err := app.ExecContext(fencedsql.WithToken(ctx, 500), q); !errors.Is(err, fencedsql.ErrBelowFloor) {
			t.Errorf("%s under 500 after the raise to 1000: %v, want ErrBelowFloor", q, err)
		}
		if _, err := app.ExecContext(fencedsql.WithToken(ctx, 1000), q); err != nil {
			t.Errorf("%s under 1000 after the raise to 1000: %v", q, err)
		}
	}

	// An operator account that sees home only: it cannot raise shop's floor, so it must
	// not report the floor in force for shop.accounts.
	user := "fo_" + home[len(home)-12:]
	if _, err := rawHome.ExecContext(ctx, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY 'floor-pw'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rawHome.Exec("DROP USER IF EXISTS '" + user + "'@'127.0.0.1'") })
	// SLAVE MONITOR: the floor tools refuse an account that cannot tell a stopped
	// replica from a primary (red-team rt48i F2); this one may tell, and sees home only.
	for _, g := range []string{"GRANT ALL ON `" + home + "`.* TO '" + user + "'@'127.0.0.1'", "GRANT SLAVE MONITOR ON *.* TO '" + user + "'@'127.0.0.1'"} {
		if _, err := rawHome.ExecContext(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := gomysql.ParseDSN(dsnHome)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd = user, "floor-pw"
	narrow, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { narrow.Close() })
	err = schema.RaiseTokenFloor(ctx, narrow, mysql.Dialect, 2000)
	var fe *schema.FloorError
	if !errors.Is(err, schema.ErrFloorUncovered) || !errors.As(err, &fe) || !fe.Raised || !slices.Contains(fe.Uncovered, shop+".accounts") {
		t.Fatalf("RaiseTokenFloor(2000) by an account that cannot see shop's guards: %v; want a *FloorError (ErrFloorUncovered, Raised) naming %s.accounts", err, shop)
	}
	if floorOf(home) != 2000 || floorOf(shop) != 1000 {
		t.Fatalf("floors after the narrow raise: home %d, shop %d; want 2000 and 1000", floorOf(home), floorOf(shop))
	}
	if f, err := schema.TokenFloor(ctx, narrow, mysql.Dialect); !errors.Is(err, schema.ErrFloorUncovered) {
		t.Fatalf("TokenFloor by the narrow account = %d, %v; want ErrFloorUncovered", f, err)
	}
	// Through the guards' owner, the lowest floor the registered tables are held to.
	if f, err := schema.TokenFloor(ctx, rawHome, mysql.Dialect); err != nil || f != 1000 {
		t.Fatalf("TokenFloor through home = %d, %v; want 1000 (shop's floor, the lowest)", f, err)
	}
}
