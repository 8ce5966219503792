package fencedsql_test

// The lost-connection rule (connLost: every driver's transport errors plus the
// dialect's ConnLossJudge) counts each driver's lost connection and ended session,
// and nothing a session survives: a constraint, a busy or lock timeout, a cancelled
// statement are the server's answers (a statement failing so is NotCommitted; a check
// query failing on a constraint stays a *SchemaError, one the server cancelled is cut:
// check_cut_interrupted_test.go).

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func TestConnLostDriverErrors(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("query: %w", err) }
	cases := []struct {
		name string
		d    dialect.Dialect
		err  error
		want bool
	}{
		{"mysql ErrInvalidConn", mysqldialect.Dialect, wrap(gomysql.ErrInvalidConn), true},
		{"mysql 1053 server shutdown", mysqldialect.Dialect, &gomysql.MySQLError{Number: 1053}, true},
		{"mysql 1927 connection killed", mysqldialect.Dialect, &gomysql.MySQLError{Number: 1927}, true},
		{"mysql 2013 lost connection", mysqldialect.Dialect, &gomysql.MySQLError{Number: 2013}, true},
		{"mysql 1062 duplicate", mysqldialect.Dialect, &gomysql.MySQLError{Number: 1062}, false},
		{"mysql 1205 lock wait timeout", mysqldialect.Dialect, &gomysql.MySQLError{Number: 1205}, false},
		{"mysql 1317 query interrupted", mysqldialect.Dialect, &gomysql.MySQLError{Number: 1317}, false},
		{"mysql 1213 deadlock", mysqldialect.Dialect, &gomysql.MySQLError{Number: 1213}, false},
		{"postgres 57P01 admin_shutdown", postgres.Dialect, wrap(&pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}), true},
		{"postgres 57P02 crash_shutdown", postgres.Dialect, &pgconn.PgError{Severity: "FATAL", Code: "57P02"}, true},
		{"postgres 57P03 cannot_connect_now", postgres.Dialect, &pgconn.PgError{Severity: "FATAL", Code: "57P03"}, true},
		{"postgres 57P01 localized severity", postgres.Dialect, &pgconn.PgError{Severity: "FATAL-LOCALIZED", Code: "57P01"}, true},
		{"postgres 08006 connection_failure", postgres.Dialect, &pgconn.PgError{Severity: "ERROR", Code: "08006"}, true},
		{"postgres idle session timeout", postgres.Dialect, &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P05"}, true},
		{"postgres conn closed", postgres.Dialect, wrap(pgconn.ErrConnClosed), true},
		{"postgres 23505 unique", postgres.Dialect, &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505"}, false},
		{"postgres 40001 serialization", postgres.Dialect, &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "40001"}, false},
		{"postgres 57014 query_canceled", postgres.Dialect, &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "57014"}, false},
		{"postgres 55P03 lock_not_available", postgres.Dialect, &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "55P03"}, false},
		// A dialect counts its own driver's errors only; the shared ones count for all.
		{"sqlite ErrInvalidConn", sqlite.Dialect, gomysql.ErrInvalidConn, false},
		{"sqlite driver.ErrBadConn", sqlite.Dialect, wrap(driver.ErrBadConn), true},
		{"sqlite context", sqlite.Dialect, wrap(context.DeadlineExceeded), true},
		// CommitOutcome judges with every registered dialect.
		{"registered ErrInvalidConn", nil, gomysql.ErrInvalidConn, true},
		{"registered 57P01", nil, &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, true},
		{"registered 23505", nil, &pgconn.PgError{Severity: "ERROR", Code: "23505"}, false},
		{"nil", postgres.Dialect, nil, false},
	}
	for _, c := range cases {
		if got := fencedsql.ConnLost(c.d, c.err); got != c.want {
			t.Errorf("%s: connLost %v, want %v", c.name, got, c.want)
		}
	}
	if !errors.Is(fencedsql.WithOutcome(mysqldialect.Dialect, gomysql.ErrInvalidConn), fencedsql.ErrCommitUnknown) {
		t.Error("a statement or COMMIT cut by mysql.ErrInvalidConn: its error does not say its outcome is unknown")
	}
	pgFatal := &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}
	if err := fencedsql.WithOutcome(postgres.Dialect, pgFatal); !errors.Is(err, fencedsql.ErrCommitUnknown) || fencedsql.CommitOutcome(pgFatal) != fencedsql.Unknown {
		t.Errorf("a COMMIT cut by PostgreSQL's 57P01: %v (outcome %v), want ErrCommitUnknown", err, fencedsql.CommitOutcome(pgFatal))
	}
}

// SQLite has no connection to lose: its busy and constraint errors are the database's
// answers, never a lost connection (a check query failing so is not cut).
func TestConnLostSQLiteBusyAndConstraintAreNot(t *testing.T) {
	ctx := context.Background()
	path := filepath.ToSlash(filepath.Join(t.TempDir(), "busy.db"))
	a := testdb.Open(t, "sqlite", "file:"+path, "CREATE TABLE t (id INTEGER PRIMARY KEY)", "INSERT INTO t VALUES (1)")
	_, dup := a.ExecContext(ctx, "INSERT INTO t VALUES (1)")
	if dup == nil {
		t.Fatal("setup: no constraint error")
	}
	b := testdb.Open(t, "sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	ca, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	if _, err := ca.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer ca.ExecContext(ctx, "ROLLBACK") //nolint:errcheck
	_, busy := b.ExecContext(ctx, "INSERT INTO t VALUES (2)")
	if busy == nil {
		t.Fatal("setup: no busy error")
	}
	for _, err := range []error{dup, busy} {
		for _, d := range []dialect.Dialect{sqlite.Dialect, nil} {
			if fencedsql.ConnLost(d, err) {
				t.Errorf("SQLite's %v counted as a lost connection (dialect %v)", err, d)
			}
		}
	}
}
