package mysql_test

// Red-team rt25a: G16 "Tokens never go back" — installation, raise and the XA wait,
// MariaDB 10.11.

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt25aGuardInstallAfterLostFloorRowZeroesFloor (fail-open). With the floor
// table's row lost MariaDB's guards refuse every write (rt22b F3, rt24c F2) and
// schema.Check says to write the row back with RaiseTokenFloor at the lock service's
// LastToken + 1. But guarding one more table in the database (schema.Check's Fix:
// GuardDDL → floorDDL's `INSERT IGNORE … VALUES (1, 0)`) writes the row back at 0:
// a stale token (20, below the floor 50 raised at the failover) is accepted again on
// every guarded table, and TokenFloor reports 0 with no error.
//
// Right behaviour: an installation writes the floor row only when it creates the floor
// table; a lost row stays missing (writes refused, ErrFloorLost) until RaiseTokenFloor.
func TestRTrt25aGuardInstallAfterLostFloorRowZeroesFloor(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE ledger (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, "DELETE FROM fencedsql_floor") // the row lost
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	stale := fencedsql.WithToken(ctx, 20)
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("before the install: %v; want ErrBelowFloor", err)
	}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	fl, flErr := schema.TokenFloor(ctx, raw, mysql.Dialect)
	if _, err := fenced.ExecContext(stale, "UPDATE accounts SET balance = 98 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after guarding another table, token 20 (floor was 50, row lost): %v; TokenFloor %d (%v); want ErrBelowFloor: the installation wrote the floor row back at 0", err, fl, flErr)
	}
}

// TestRTrt25aRaiseWaitsForUnrelatedPreparedXA (over-refusal). RaiseTokenFloor on MariaDB
// waits for every XA transaction XA RECOVER lists at the raise (dialect.PreparedLister)
// — server-wide, whatever it wrote. An XA transaction prepared by another application
// that wrote only an unguarded table (here: a table with no guard, in the same database;
// another database of the server is the same) holds the raise until its context ends,
// and RaiseTokenFloor fails with ErrFloorUnsettled although no transaction that judged a
// write under the old floor can commit. A prepared XA transaction left behind by a
// crashed transaction manager (in-doubt, possibly for days) makes every raise fail so:
// the failover hook reports "not settled" at each failover. PostgreSQL's settle waits
// only for transactions (prepared ones included) that hold a write lock on a guarded
// table (OpenTransactionsQuery).
//
// Decided (an over-refusal kept): which tables a prepared XA transaction wrote is
// visible only with the PROCESS privilege (information_schema.INNODB_TRX), so the raise
// waits for every XA transaction prepared at the raise, naming each as XA ROLLBACK
// takes it.
func TestRTrt25aRaiseWaitsForUnrelatedPreparedXA(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE audit_log (id BIGINT PRIMARY KEY, msg TEXT) ENGINE=InnoDB")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	xdb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := xdb.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	xid := "'rt25a_unrelated', 'b', 7"
	t.Cleanup(func() { _, _ = raw.Exec("XA ROLLBACK " + xid) })
	for _, s := range []string{"XA START " + xid, "INSERT INTO audit_log VALUES (1, 'x')", "XA END " + xid, "XA PREPARE " + xid} {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	_ = c.Raw(func(any) error { return driver.ErrBadConn }) // drop the session: the XA stays prepared
	c.Close()
	xdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Decided: the raise waits for every prepared XA transaction (which tables one wrote
	// is visible only with the PROCESS privilege); the error names it as XA ROLLBACK
	// takes it, and it ends by that statement.
	err = schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10)
	if !errors.Is(err, schema.ErrFloorUnsettled) || !strings.Contains(err.Error(), "X'72743235615f756e72656c61746564',X'62',7") {
		t.Fatalf("RaiseTokenFloor with an unrelated XA transaction prepared: %v; want ErrFloorUnsettled naming X'…',X'…',7", err)
	}
	if _, err := raw.Exec("XA ROLLBACK X'72743235615f756e72656c61746564',X'62',7"); err != nil {
		t.Fatalf("XA ROLLBACK of the XID as named: %v", err)
	}
	if err := schema.RaiseTokenFloor(context.Background(), raw, mysql.Dialect, 10); err != nil {
		t.Fatalf("RaiseTokenFloor after it ended: %v", err)
	}
}

// TestRTrt25aSettleErrorXIDUnusable (cosmetic). When a raise gives up waiting for a
// prepared XA transaction it names it in SettleError.Open as "XA <data>", XA RECOVER's
// last column: gtrid and bqual run together, the formatID dropped (binary bytes would
// be printed raw). The operator told to "end them" cannot: for the XID
// ('rt25a_x', 'b', 7) the error says "XA rt25a_xb", and XA ROLLBACK 'rt25a_xb' fails
// with XAER_NOTA. Two distinct XIDs ('ab',”) and ('a','b') are also listed as one.
//
// Right behaviour: name the XID in the form XA COMMIT/ROLLBACK accept (XA RECOVER
// FORMAT='SQL' gives X'…',X'…',formatID), and key the wait on the whole XID.
func TestRTrt25aSettleErrorXIDUnusable(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	xdb, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := xdb.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	xid := "'rt25a_x', 'b', 7"
	t.Cleanup(func() { _, _ = raw.Exec("XA ROLLBACK " + xid) })
	for _, s := range []string{"XA START " + xid, "UPDATE accounts SET fence_token = 8, version = version + 1, balance = 99 WHERE id = 1", "XA END " + xid, "XA PREPARE " + xid} {
		if _, err := c.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	c.Close()
	xdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rerr := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10)
	var se *schema.SettleError
	if !errors.As(rerr, &se) || len(se.Open) != 1 {
		t.Fatalf("RaiseTokenFloor over a prepared XA: %v; want a *SettleError naming it", rerr)
	}
	name := strings.TrimPrefix(se.Open[0], "XA ")
	_, xerr := raw.Exec("XA ROLLBACK " + name)
	if xerr != nil {
		_, xerr2 := raw.Exec("XA ROLLBACK '" + name + "'")
		if xerr2 != nil {
			t.Errorf("SettleError names the prepared XA transaction %q; neither XA ROLLBACK %s (%v) nor XA ROLLBACK '%s' (%v) ends it; want the XID in a form XA ROLLBACK accepts", se.Open[0], name, xerr, name, xerr2)
		}
	}
}

// TestRTrt25aTokenFloorRunsAppCodeAsOperator (fail-open; privilege escalation). With a
// DSN that names no database (the failover hook's usual form: "every database whose
// guards the account can see"), TokenFloors reads `MAX(floor)` from the floor table of
// every database with a trigger named fencedsql_guard_%/fencedsql_floor_% whose body
// contains `FROM fencedsql_floor f WHERE` — whoever created it. An application account
// with ALL on its own database creates there a decoy trigger of that name and a
// `fencedsql_floor` that is an SQL SECURITY INVOKER view over an SQL SECURITY INVOKER
// function: schema.TokenFloor (and schema.Check, fencedsql-schema -raise-floor's report)
// run by the operator executes that function with the operator's rights. Here it sets
// the real database's floor from 50 to 0, and token 20 then writes accounts.
//
// Right behaviour: the floor tools read only base tables (information_schema.TABLES
// TABLE_TYPE = 'BASE TABLE') of databases whose guards are this library's (the guard
// triggers GuardInstalledQuery recognises, defined by the guards' definer), never a
// view or code another account controls.
func TestRTrt25aTokenFloorRunsAppCodeAsOperator(t *testing.T) {
	dsn := testdb.MySQL(t)
	appDB := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	realCfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	appCfg, err := gomysql.ParseDSN(appDB)
	if err != nil {
		t.Fatal(err)
	}
	user := fmt.Sprintf("rt25a_app_%d", time.Now().UnixNano()%1_000_000_000)
	testdb.Exec(t, raw, "CREATE USER '"+user+"'@'%' IDENTIFIED BY 'x'", "GRANT ALL ON `"+appCfg.DBName+"`.* TO '"+user+"'@'%'")
	t.Cleanup(func() { _, _ = raw.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	appCfg.User, appCfg.Passwd = user, "x"
	app := testdb.Open(t, "mysql", appCfg.FormatDSN())
	testdb.Exec(t, app,
		"CREATE TABLE decoy (id INT) ENGINE=InnoDB",
		"CREATE TRIGGER fencedsql_guard_decoy BEFORE INSERT ON decoy FOR EACH ROW SET @rt25a = (SELECT 1 FROM fencedsql_floor f WHERE 1 = 0)",
		"CREATE FUNCTION pwn() RETURNS BIGINT NOT DETERMINISTIC MODIFIES SQL DATA SQL SECURITY INVOKER BEGIN DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END; UPDATE `"+realCfg.DBName+"`.fencedsql_floor SET floor = 0 WHERE id = 1; RETURN 1; END",
		"CREATE SQL SECURITY INVOKER VIEW fencedsql_floor AS SELECT 1 AS id, pwn() AS floor")
	// The operator, DSN without a database.
	opCfg := realCfg.Clone()
	opCfg.DBName = ""
	op := testdb.Open(t, "mysql", opCfg.FormatDSN())
	_, _ = schema.TokenFloor(ctx, op, mysql.Dialect)
	var fl int64
	if err := raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&fl); err != nil {
		t.Fatal(err)
	}
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 99 WHERE id = 1")
	if fl < 50 || !errors.Is(werr, fencedsql.ErrBelowFloor) {
		t.Errorf("after the operator's schema.TokenFloor next to an application account's decoy trigger and invoker view %s.fencedsql_floor: real floor %d (was 50); token 20 on accounts: %v; want floor 50 and ErrBelowFloor", appCfg.DBName, fl, werr)
	}
}
