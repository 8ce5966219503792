package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guard trigger reads the floor table of its own database. RaiseTokenFloor through a
// DSN naming another database raises nothing there and says where the guards are (a
// red-team pass: it created a floor table in that database, which no guard read, and
// reported success); through the guarded database's DSN it raises that database's
// floor only; through a DSN naming no database, every database whose guards the account
// can see.
func TestFloorOtherDatabase(t *testing.T) {
	ctx := context.Background()
	dsnA, dsnB, dsnC := testdb.MySQL(t), testdb.MySQL(t), testdb.MySQL(t)
	name := func(dsn string) string {
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.DBName
	}
	nameA, nameB, nameC := name(dsnA), name(dsnB), name(dsnC)
	open := func(driver, dsn string) *sql.DB {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	exec := func(db *sql.DB, stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	g := mysql.Dialect.(dialect.Guarder)
	rawA, rawB := open("mysql", dsnA), open("mysql", dsnB)
	exec(rawA, accounts)
	exec(rawA, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	// C's guard installed through B's connection, on C's table by its qualified name:
	// its triggers are in C and read C's floor.
	exec(open("mysql", dsnC), accounts)
	exec(rawB, g.GuardDDL(dialect.TableName{Schema: nameC, Name: "accounts"}, "fence_token", "version")...)
	db := open("fenced-mysql", fencetest.WithParam(dsnA, "fenced_tables=accounts"))
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, balance) VALUES (1, 0)"); err != nil {
		t.Fatal(err)
	}

	// A DSN naming B, where no guard is.
	err := schema.RaiseTokenFloor(ctx, rawB, mysql.Dialect, 1000)
	var fe *schema.FloorError
	if !errors.Is(err, schema.ErrNoFloorGuard) || !errors.As(err, &fe) {
		t.Fatalf("RaiseTokenFloor through B: %v, want ErrNoFloorGuard", err)
	}
	if !slices.Contains(fe.Elsewhere, nameA+".fencedsql_floor") || !slices.Contains(fe.Elsewhere, nameC+".fencedsql_floor") {
		t.Errorf("the error names %q, want A's and C's floor tables", fe.Elsewhere)
	}
	// Installing C's guard through B's connection creates B's floor table to seed C's
	// floor from it (red-team rt42c F1); no guard reads it, and the raise through B
	// must not have written it.
	var n int
	if err := rawB.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'fencedsql_floor'", nameB).Scan(&n); err != nil || n > 1 {
		t.Fatalf("floor tables in B: %d (%v)", n, err)
	}
	if n == 1 {
		var f int64
		if err := rawB.QueryRowContext(ctx, "SELECT COALESCE(MAX(floor), 0) FROM fencedsql_floor").Scan(&f); err != nil || f != 0 {
			t.Fatalf("B's floor (no guard reads it) after the refused raise through B: %d, %v; want 0 (not raised)", f, err)
		}
	}
	if f, err := schema.TokenFloor(ctx, rawB, mysql.Dialect); !errors.Is(err, schema.ErrNoFloorGuard) {
		t.Fatalf("TokenFloor through B = %d, %v; want ErrNoFloorGuard", f, err)
	}

	// A DSN naming A: A's floor, not C's.
	if err := schema.RaiseTokenFloor(ctx, rawA, mysql.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	if fl, err := schema.TokenFloors(ctx, rawA, mysql.Dialect); err != nil || len(fl) != 1 || fl[0] != (schema.Floor{Table: nameA + ".fencedsql_floor", Floor: 1000}) {
		t.Fatalf("TokenFloors through A = %+v, %v; want A's at 1000", fl, err)
	}
	floorOf := func(db string) int64 {
		t.Helper()
		var f int64
		if err := rawB.QueryRowContext(ctx, "SELECT floor FROM `"+db+"`.fencedsql_floor WHERE id = 1").Scan(&f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := floorOf(nameC); f != 0 {
		t.Fatalf("C's floor after raising A's: %d, want 0", f)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 5 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("UPDATE under 20 after the raise to 1000: %v, want ErrBelowFloor", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 21), "INSERT INTO accounts (id, balance) VALUES (2, 0)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("INSERT under 21 after the raise to 1000: %v, want ErrBelowFloor", err)
	}

	// A DSN naming no database, for an account that sees A and C only: both raised.
	user := "ff_" + nameC[len(nameC)-12:]
	exec(rawB, "CREATE USER '"+user+"'@'127.0.0.1' IDENTIFIED BY 'floor-pw'",
		"GRANT ALL ON `"+nameA+"`.* TO '"+user+"'@'127.0.0.1'",
		"GRANT ALL ON `"+nameC+"`.* TO '"+user+"'@'127.0.0.1'",
		// RaiseTokenFloor lists the replication connections (red-team rt48i).
		"GRANT SLAVE MONITOR ON *.* TO '"+user+"'@'127.0.0.1'")
	t.Cleanup(func() { rawB.Exec("DROP USER IF EXISTS '" + user + "'@'127.0.0.1'") })
	cfg, err := gomysql.ParseDSN(dsnA)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Passwd, cfg.DBName = user, "floor-pw", ""
	scoped := open("mysql", cfg.FormatDSN())
	if err := schema.RaiseTokenFloor(ctx, scoped, mysql.Dialect, 2000); err != nil {
		t.Fatal(err)
	}
	if fl, err := schema.TokenFloors(ctx, scoped, mysql.Dialect); err != nil || len(fl) != 2 || fl[0].Floor != 2000 || fl[1].Floor != 2000 {
		t.Fatalf("TokenFloors with no database = %+v, %v; want A's and C's at 2000", fl, err)
	}
	if floorOf(nameA) != 2000 || floorOf(nameC) != 2000 {
		t.Fatalf("floors after the raise with no database: A %d, C %d; want 2000", floorOf(nameA), floorOf(nameC))
	}
	if _, err := rawB.ExecContext(ctx, "INSERT INTO `"+nameC+"`.accounts (id, balance, fence_token, version) VALUES (1, 0, 30, 1)"); err == nil ||
		!errors.Is(fencedsql.AsGuardError(mysql.Dialect, err), fencedsql.ErrBelowFloor) {
		t.Errorf("plain INSERT into C under 30 after the raise to 2000: %v, want the floor's refusal", err)
	}
}
