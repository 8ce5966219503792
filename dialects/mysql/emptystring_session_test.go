package mysql_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// MariaDB's sql_mode EMPTY_STRING_IS_NULL reads every ” literal as NULL, those of
// the wrapper's own catalog reads included (the guard-table check's column
// descriptions became NULL, and a healthy tombstone table read as "not as they
// created it": red-team rt51f F2). A pool whose session has the mode (a DSN
// parameter, a server or init_connect default) is refused with a *SessionError naming
// sql_mode (Records: before the pool reads what is guarded), not sent to repair the
// guard.
func TestEmptyStringIsNullSessionRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn)
	testdb.Exec(t, raw, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance) VALUES (1, 0)")
	spec := schema.GuardSpec{Table: "accounts"}
	fencetest.Guard(t, ctx, raw, mysql.Dialect, spec)
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	plain := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if _, err := plain.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 5 WHERE id = 1"); err != nil {
		t.Fatalf("default sql_mode: %v", err)
	}
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts&sql_mode="+url.QueryEscape("'STRICT_TRANS_TABLES,EMPTY_STRING_IS_NULL'")))
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 10 WHERE id = 1")
	var se *fencedsql.SessionError
	if !errors.As(err, &se) || se.Setting != "sql_mode" || !se.Records || !strings.Contains(se.Problem, "EMPTY_STRING_IS_NULL") {
		t.Fatalf("a write through a pool whose sql_mode has EMPTY_STRING_IS_NULL: %.400v\nwant a *SessionError naming sql_mode and EMPTY_STRING_IS_NULL, with Records (not a guard-table problem)", err)
	}
}
