package fencedsql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// On MySQL/MariaDB a statement that commits implicitly is refused inside a transaction
// with nothing sent — the classes that touch a whole server (FLUSH, RESET, account
// management, replication control) included, which the server tests do not run — and
// passes outside one.
func TestImplicitCommitRefusedInTxMock(t *testing.T) {
	db, mock := fencedtest.New(t, mysql.Dialect, fencedsql.Guard("accounts"))
	ctx := context.Background()
	stmts := []string{
		"FLUSH PRIVILEGES", "FLUSH TABLES", "RESET QUERY CACHE", "CREATE USER u1", "DROP USER u1",
		"GRANT SELECT ON other TO u1", "REVOKE SELECT ON other FROM u1", "SET PASSWORD FOR u1 = 'x'",
		"CHANGE MASTER TO MASTER_HOST = 'h'", "STOP SLAVE", "ANALYZE TABLE other", "CREATE TABLE t (x INT)",
	}
	mock.ExpectBegin()
	mock.ExpectRollback()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q inside a transaction: %v; want ErrUnsupported, nothing sent", s, err)
		}
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		mock.ExpectExec(s).WillReturnResult(sqlmock.NewResult(0, 0))
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Errorf("%q outside a transaction: %v", s, err)
		}
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}

// A lock wait timeout (1205) ends the transaction only when the server says it rolled
// it back (innodb_rollback_on_timeout, read on the connection after the error); a
// deadlock (1213) always does. An ended transaction refuses its statements unsent and
// its Commit sends only a ROLLBACK.
func TestServerRollbackMock(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		setting string // the answer to the setting's query; "" for no query
		ended   bool
	}{
		{"deadlock", &gomysql.MySQLError{Number: 1213, Message: "Deadlock found"}, "", true},
		{"timeout, rollback_on_timeout ON", &gomysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, "1", true},
		{"timeout, rollback_on_timeout OFF", &gomysql.MySQLError{Number: 1205, Message: "Lock wait timeout"}, "0", false},
		{"another error", &gomysql.MySQLError{Number: 1146, Message: "no such table"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, mock := fencedtest.New(t, mysql.Dialect, fencedsql.Guard("accounts"))
			ctx := context.Background()
			mock.ExpectBegin()
			mock.ExpectExec("INSERT INTO other VALUES (1)").WillReturnError(c.err)
			if c.setting != "" {
				mock.ExpectQuery("SELECT @@GLOBAL.innodb_rollback_on_timeout").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow(c.setting))
			}
			if c.ended {
				mock.ExpectRollback()
			} else {
				mock.ExpectExec("INSERT INTO other VALUES (2)").WillReturnResult(sqlmock.NewResult(0, 1))
				mock.ExpectCommit()
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO other VALUES (1)"); !errors.Is(err, c.err) {
				t.Fatalf("the failing statement: %v; want %v", err, c.err)
			}
			_, err = tx.ExecContext(ctx, "INSERT INTO other VALUES (2)")
			cerr := tx.Commit()
			if c.ended {
				if !errors.Is(err, fencedsql.ErrUnsupported) || !errors.Is(err, c.err) {
					t.Fatalf("the next statement: %v; want ErrUnsupported wrapping %v", err, c.err)
				}
				if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted || !errors.Is(cerr, c.err) {
					t.Fatalf("Commit: %v (outcome %v); want NotCommitted wrapping %v", cerr, fencedsql.CommitOutcome(cerr), c.err)
				}
			} else if err != nil || cerr != nil {
				t.Fatalf("the next statement: %v, Commit: %v; want both to succeed", err, cerr)
			}
			if err := mock.ExpectationsWereMet(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// SQLite has no query that tells whether an error ended the transaction: its dialect
// marks every error RollbackIf with no query and implements dialect.TxProber (a BEGIN
// probe). A BEGIN that succeeds (the connection was in autocommit) is rolled back at
// once and ends the transaction; a probe that fails for another reason ends it too
// (fail closed: Commit rolls back). The probe finding the transaction open (SQLite's
// "cannot start a transaction within a transaction") is tested on SQLite itself
// (internal/redteam TestSQLiteStatementErrorKeepsTransaction).
func TestServerRollbackProbeMock(t *testing.T) {
	stmtErr := errors.New("interrupted")
	for _, beginErr := range []error{nil, errors.New("disk I/O error")} {
		db, mock := fencedtest.New(t, sqlite.Dialect, fencedsql.Guard("accounts"))
		ctx := context.Background()
		mock.ExpectBegin()
		mock.ExpectExec("INSERT INTO other VALUES (1)").WillReturnError(stmtErr)
		if beginErr == nil {
			mock.ExpectExec("BEGIN").WillReturnResult(sqlmock.NewResult(0, 0))
			mock.ExpectExec("ROLLBACK").WillReturnResult(sqlmock.NewResult(0, 0))
		} else {
			mock.ExpectExec("BEGIN").WillReturnError(beginErr)
		}
		mock.ExpectRollback()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO other VALUES (1)"); !errors.Is(err, stmtErr) {
			t.Fatalf("the failing statement: %v", err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO other VALUES (2)"); !errors.Is(err, fencedsql.ErrUnsupported) || !errors.Is(err, stmtErr) {
			t.Fatalf("probe BEGIN %v: the next statement: %v; want ErrUnsupported wrapping the statement's error", beginErr, err)
		}
		if cerr := tx.Commit(); fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
			t.Fatalf("probe BEGIN %v: Commit: %v; want NotCommitted", beginErr, cerr)
		}
		if err := mock.ExpectationsWereMet(); err != nil {
			t.Fatal(err)
		}
	}
}
