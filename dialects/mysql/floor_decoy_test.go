package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
	gomysql "github.com/go-sql-driver/mysql"
)

// Red-team rt25a: G14 "Tokens never go back" — installation, raise and the XA wait,
// MariaDB 10.11.

// TestTokenFloorRunsNoAppCodeAsOperator (fail-open; privilege escalation). With a
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
// view or code another account controls. The fenced write under token 20 is then
// refused: ErrBelowFloor, or — since routines writing the floor are judged as guard
// writers (red-team rt47b F1 fix), and pwn's body writes the real database's floor —
// ErrSchema naming pwn, which is refused before the floor is read.
func TestTokenFloorRunsNoAppCodeAsOperator(t *testing.T) {
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
	refused := errors.Is(werr, fencedsql.ErrBelowFloor) || errors.Is(werr, fencedsql.ErrSchema) && strings.Contains(werr.Error(), ".pwn")
	if fl < 50 || !refused {
		t.Errorf("after the operator's schema.TokenFloor next to an application account's decoy trigger and invoker view %s.fencedsql_floor: real floor %d (was 50); token 20 on accounts: %v; want floor 50 and ErrBelowFloor (or ErrSchema naming the floor writer pwn)", appCfg.DBName, fl, werr)
	}
}
