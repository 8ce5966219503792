package fencedsql_test

// A check query that waited for a lock the server did not grant — PostgreSQL 55P03
// (lock_timeout) and 40P01 (deadlock), MySQL/MariaDB 1205 (lock_wait_timeout,
// innodb_lock_wait_timeout) and 1213 (deadlock); SQLite's SQLITE_BUSY and
// SQLITE_LOCKED are the dialects/sqlite tests' — is cut (*CheckCutError wrapping the
// server's error), not a *SchemaError with the go-sqlmock hint: another session held
// what it reads, which says nothing about the schema (red-team rt65b F1). Neither is
// a lost connection.

import (
	"context"
	"errors"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

func TestCheckQueryLockWaitIsCut(t *testing.T) {
	for _, c := range []struct {
		d   dialect.Dialect
		err error
	}{
		{postgres.Dialect, &pgconn.PgError{Severity: "ERROR", Code: "55P03", Message: "canceling statement due to lock timeout"}},
		{postgres.Dialect, &pgconn.PgError{Severity: "ERROR", Code: "40P01", Message: "deadlock detected"}},
		{mysqldialect.Dialect, &gomysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction"}},
		{mysqldialect.Dialect, &gomysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}},
	} {
		if fencedsql.ConnLost(c.d, c.err) {
			t.Errorf("%v counted as a lost connection", c.err)
		}
		for _, problem := range []string{"the session check query failed", "the column check query failed"} {
			err := fencedsql.CheckQueryErr(context.Background(), c.d, "accounts", problem, c.err)
			if !errors.As(err, new(*fencedsql.CheckCutError)) || errors.Is(err, fencedsql.ErrSchema) || strings.Contains(err.Error(), "mock driver") {
				t.Errorf("%v: %v (%T), want a *CheckCutError, not ErrSchema nor the mock hint", c.err, err, err)
			}
			if !errors.Is(err, c.err) {
				t.Errorf("%v does not wrap the server's error", err)
			}
			if o := fencedsql.CommitOutcome(err); o != fencedsql.NotCommitted {
				t.Errorf("%v: CommitOutcome %v, want NotCommitted", err, o)
			}
		}
	}
	// Not a lock wait: still a schema problem.
	err := fencedsql.CheckQueryErr(context.Background(), postgres.Dialect, "accounts", "the column check query failed", &pgconn.PgError{Severity: "ERROR", Code: "42501"})
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("42501: %v, want ErrSchema", err)
	}
}
