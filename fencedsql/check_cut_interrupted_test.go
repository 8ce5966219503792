package fencedsql_test

// A check query the server interrupts on a session that goes on — a statement timeout
// or a cancel request: PostgreSQL 57014, MariaDB 1969 (max_statement_time), MySQL
// 1317 (KILL QUERY) and 3024 (max_execution_time) — is cut (*CheckCutError), not a
// *SchemaError with the go-sqlmock hint: it says nothing about the schema (red-team
// rt53b F1 leftover). The errors are the real servers'.

import (
	"context"
	"errors"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func TestCheckQueryInterruptedIsCut(t *testing.T) {
	cases := []struct {
		name, driver string
		dsn          func(testing.TB) string
		d            dialect.Dialect
		setup, slow  string
	}{
		{"postgres statement_timeout", "pgx", testdb.Postgres, postgres.Dialect,
			"SET statement_timeout = '50ms'", "SELECT pg_sleep(5)"},
		{"mariadb max_statement_time", "mysql", testdb.MySQL, mysqldialect.Dialect,
			"SET SESSION max_statement_time = 0.05", "SELECT COUNT(*) FROM information_schema.columns a, information_schema.columns b, information_schema.columns c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			db := testdb.Open(t, c.driver, c.dsn(t))
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, c.setup); err != nil {
				t.Fatal(err)
			}
			_, qerr := conn.ExecContext(ctx, c.slow)
			if qerr == nil {
				t.Fatal("setup: the slow query was not interrupted")
			}
			if fencedsql.ConnLost(c.d, qerr) {
				t.Fatalf("an interrupted statement (%v) counted as a lost connection: its outcome would read Unknown", qerr)
			}
			err = fencedsql.CheckQueryErr(ctx, c.d, "accounts", "the column check query failed", qerr)
			var cut *fencedsql.CheckCutError
			if !errors.As(err, &cut) || errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("check query interrupted by the server (%v): %v (%T), want a *CheckCutError, not ErrSchema", qerr, err, err)
			}
			if !errors.Is(err, qerr) {
				t.Errorf("%v does not wrap the driver's error", err)
			}
			// The session goes on: the connection still answers.
			if err := conn.PingContext(ctx); err != nil {
				t.Errorf("the session did not survive the interruption: %v", err)
			}
		})
	}
	// The other spellings, and what is not an interruption.
	for _, c := range []struct {
		d    dialect.Dialect
		err  error
		want bool
	}{
		{mysqldialect.Dialect, &gomysql.MySQLError{Number: 1317}, true},
		{mysqldialect.Dialect, &gomysql.MySQLError{Number: 3024}, true},
		{mysqldialect.Dialect, &gomysql.MySQLError{Number: 1062}, false},
		{mysqldialect.Dialect, &gomysql.MySQLError{Number: 1205}, true}, // a lock wait: cut too (TestCheckQueryLockWaitIsCut)
		{postgres.Dialect, &pgconn.PgError{Severity: "ERROR", Code: "57014"}, true},
		{postgres.Dialect, &pgconn.PgError{Severity: "ERROR", Code: "55P03"}, true}, // a lock wait: cut too (TestCheckQueryLockWaitIsCut)
		{postgres.Dialect, &pgconn.PgError{Severity: "ERROR", Code: "42P01"}, false},
	} {
		err := fencedsql.CheckQueryErr(context.Background(), c.d, "", "the session check query failed", c.err)
		if got := errors.As(err, new(*fencedsql.CheckCutError)); got != c.want {
			t.Errorf("%v: cut %v, want %v (%v)", c.err, got, c.want, err)
		}
		if c.want == errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("%v: ErrSchema %v, want %v", c.err, !c.want, c.want)
		}
	}
}
