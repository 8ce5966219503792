package mysql_test

// A statement time limit in the session (MariaDB's max_statement_time, MySQL's
// max_execution_time) must not change what the wrapper's own reads answer (red-team
// rt54a F1): MariaDB stops filling information_schema.GLOBAL_STATUS at the kill flag
// and returns the query without the Slaves_running row, which the writable-primary
// test read as a replica — a write on a healthy primary was refused with ErrNotPrimary.
// The session query and WritablePrimaryQuery run with no time limit; the caller's
// context bounds them.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

var tinyStatementTimes = []string{"0.00005", "0.0001", "0.00015", "0.0002", "0.0003", "0.0005"}

func TestWritablePrimaryUnderStatementTimeLimit(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	var ro int
	if err := raw.QueryRow("SELECT @@GLOBAL.read_only").Scan(&ro); err != nil || ro != 0 {
		t.Fatalf("setup: the test server is not writable (%d, %v)", ro, err)
	}
	// The floor tools' test, read directly, many times under tiny limits.
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mariadb bool
	if err := conn.QueryRowContext(ctx, "SELECT VERSION() LIKE '%MariaDB%'").Scan(&mariadb); err != nil {
		t.Fatal(err)
	}
	limitVar := "max_execution_time = 1" // MySQL: milliseconds, the smallest limit
	if mariadb {
		limitVar = "max_statement_time = "
	}
	for i := 0; i < 300; i++ {
		set := limitVar
		if mariadb {
			set += tinyStatementTimes[i%len(tinyStatementTimes)]
		}
		if _, err := conn.ExecContext(ctx, "SET SESSION "+set); err != nil {
			t.Fatal(err)
		}
		var primary int
		if err := conn.QueryRowContext(ctx, mysql.Dialect.(dialect.PrimaryChecker).WritablePrimaryQuery()).Scan(&primary); err != nil || primary != 1 {
			t.Fatalf("read %d under SET SESSION %s: writable primary %d, %v; want 1 (the read must not be cut short)", i, set, primary, err)
		}
	}
	unlimit := map[bool]string{true: "SET SESSION max_statement_time = 0", false: "SET SESSION max_execution_time = 0"}[mariadb]
	if _, err := conn.ExecContext(ctx, unlimit); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// The pool's session check under the same limits: a write is never refused as if
	// the primary were a replica.
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id) VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(4 * time.Second)
	for i := 1; time.Now().Before(deadline); i++ {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		set := limitVar
		if mariadb {
			set += tinyStatementTimes[i%len(tinyStatementTimes)]
		}
		if _, err := c.ExecContext(ctx, "SET SESSION "+set); err != nil {
			t.Fatal(err)
		}
		_, err = c.ExecContext(fencedsql.WithToken(ctx, 5), fmt.Sprintf("UPDATE accounts SET balance = %d WHERE id = 0", i))
		c.ExecContext(ctx, unlimit) //nolint:errcheck
		c.Close()
		if errors.Is(err, fencedsql.ErrNotPrimary) {
			t.Fatalf("write %d under SET SESSION %s on a writable primary: %v; want success or an interrupted statement, never ErrNotPrimary", i, set, err)
		}
	}
}
