// The mapping of the drivers' errors to the wrapper's, over go-sqlmock, for PostgreSQL and MySQL.

package fencedsql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

func TestSqlmockErrorMappingPostgres(t *testing.T) {
	in := `UPDATE accounts SET x = $1 WHERE id = $2`
	out := `UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`

	t.Run("fenced", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect)
		mock.ExpectExec(out).WithArgs(int64(1), int64(42), int64(7)).
			WillReturnError(&pgconn.PgError{Code: "23502", ColumnName: "fence_token", TableName: "accounts"})
		_, err := db.ExecContext(withTok(7), in, 1, 42)
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("err = %v, want ErrFenced", err)
		}
		var fe *fencedsql.FencedError
		if !errors.As(err, &fe) || fe.Table != "accounts" || fe.Token != 7 {
			t.Errorf("FencedError = %+v", fe)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23502" {
			t.Errorf("the driver's *pgconn.PgError is not reachable: %v", err)
		}
		if errors.Is(err, fencedsql.ErrVersionConflict) || errors.Is(err, fencedsql.ErrDuplicate) {
			t.Errorf("err matches another sentinel: %v", err)
		}
		mockMet(t, mock)
	})
	t.Run("duplicate", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect)
		mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(1), int64(7)).
			WillReturnError(&pgconn.PgError{Code: "23505", ConstraintName: "accounts_pkey", Detail: "Key (id)=(1) already exists."})
		_, err := db.ExecContext(withTok(7), `INSERT INTO accounts (id) VALUES ($1)`, 1)
		if !errors.Is(err, fencedsql.ErrDuplicate) {
			t.Fatalf("err = %v, want ErrDuplicate", err)
		}
		var de *fencedsql.DuplicateError
		if !errors.As(err, &de) || de.Constraint != "accounts_pkey" || de.Table != "accounts" {
			t.Errorf("DuplicateError = %+v", de)
		}
		if !strings.Contains(err.Error(), "accounts_pkey") || strings.Contains(err.Error(), "(id)=(1)") {
			t.Errorf("message %q: want the constraint and not the values", err)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Errorf("the driver's error is not reachable")
		}
		mockMet(t, mock)
	})
	t.Run("version conflict", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect)
		mock.ExpectExec(`UPDATE accounts SET x = $1, "version" = CASE WHEN "version" = $4 THEN "version" + 1 WHEN "fence_token" <= $3 THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`).
			WithArgs(int64(1), int64(42), int64(7), int64(3)).
			WillReturnError(&pgconn.PgError{Code: "23502", ColumnName: "version"})
		_, err := db.ExecContext(fencedsql.ExpectVersion(withTok(7), 3), in, 1, 42)
		if !errors.Is(err, fencedsql.ErrVersionConflict) || errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("err = %v, want ErrVersionConflict only", err)
		}
		var ve *fencedsql.VersionConflictError
		if !errors.As(err, &ve) || ve.Expected != 3 || ve.Table != "accounts" {
			t.Errorf("VersionConflictError = %+v", ve)
		}
		mockMet(t, mock)
	})
	t.Run("other NOT NULL column is not fencing", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect)
		orig := &pgconn.PgError{Code: "23502", ColumnName: "owner"}
		mock.ExpectExec(out).WithArgs(int64(1), int64(42), int64(7)).WillReturnError(orig)
		_, err := db.ExecContext(withTok(7), in, 1, 42)
		if errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrVersionConflict) {
			t.Errorf("err = %v: a NOT NULL violation on another column is not fencing", err)
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe != orig {
			t.Errorf("err = %v, want the driver's error", err)
		}
		mockMet(t, mock)
	})
	// red-team rt56d F1: a NOT NULL of another table (an audit table an ordinary
	// trigger writes) whose column is named like a fencing column, and a NULL version
	// where no ExpectVersion was asked, are the driver's error.
	for _, orig := range []*pgconn.PgError{
		{Code: "23502", ColumnName: "fence_token", TableName: "audit", SchemaName: "public"},
		{Code: "23502", ColumnName: "version", TableName: "audit", SchemaName: "public"},
		{Code: "23502", ColumnName: "version"},
	} {
		t.Run("NOT NULL of "+orig.TableName+"."+orig.ColumnName+" is not fencing", func(t *testing.T) {
			db, mock := newMockDB(t, postgres.Dialect)
			mock.ExpectExec(out).WithArgs(int64(1), int64(42), int64(7)).WillReturnError(orig)
			_, err := db.ExecContext(withTok(7), in, 1, 42)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe != orig || errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrVersionConflict) || errors.Is(err, fencedsql.ErrGuard) {
				t.Errorf("err = %v (%T), want the driver's error as it is", err, err)
			}
			mockMet(t, mock)
		})
	}
	t.Run("other errors unchanged", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect)
		boom := errors.New("boom")
		mock.ExpectExec(out).WithArgs(int64(1), int64(42), int64(7)).WillReturnError(boom)
		if _, err := db.ExecContext(withTok(7), in, 1, 42); err != boom {
			t.Errorf("err = %v, want the driver's error itself", err)
		}
		mockMet(t, mock)
	})
}

func TestSqlmockErrorMappingMySQL(t *testing.T) {
	in := `UPDATE accounts SET x = ? WHERE id = ?`
	out := "UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?"

	t.Run("fenced", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect)
		mock.ExpectExec(out).WithArgs(int64(1), int64(7), int64(7), int64(42)).
			WillReturnError(&mysql.MySQLError{Number: 1048, Message: "Column 'fence_token' cannot be null"})
		_, err := db.ExecContext(withTok(7), in, 1, 42)
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("err = %v, want ErrFenced", err)
		}
		var fe *fencedsql.FencedError
		if !errors.As(err, &fe) || fe.Table != "accounts" || fe.Token != 7 {
			t.Errorf("FencedError = %+v", fe)
		}
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1048 {
			t.Errorf("the driver's *mysql.MySQLError is not reachable")
		}
		mockMet(t, mock)
	})
	t.Run("version conflict", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect)
		mock.ExpectExec("UPDATE accounts SET x = ?, `version` = CASE WHEN `version` = ? THEN `version` + 1 WHEN `fence_token` <= ? THEN NULL ELSE `version` END, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?").
			WithArgs(int64(1), int64(3), int64(7), int64(7), int64(7), int64(42)).
			WillReturnError(&mysql.MySQLError{Number: 1048, Message: "Column 'version' cannot be null"})
		_, err := db.ExecContext(fencedsql.ExpectVersion(withTok(7), 3), in, 1, 42)
		if !errors.Is(err, fencedsql.ErrVersionConflict) || errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("err = %v, want ErrVersionConflict", err)
		}
		mockMet(t, mock)
	})
	t.Run("NULL version without ExpectVersion is not a conflict", func(t *testing.T) {
		// red-team rt56d F1: 1048 names no table; the wrapper's write sets no NULL
		// version unless a version was expected.
		db, mock := newMockDB(t, mysqldialect.Dialect)
		orig := &mysql.MySQLError{Number: 1048, Message: "Column 'version' cannot be null"}
		mock.ExpectExec(out).WithArgs(int64(1), int64(7), int64(7), int64(42)).WillReturnError(orig)
		_, err := db.ExecContext(withTok(7), in, 1, 42)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me != orig || errors.Is(err, fencedsql.ErrVersionConflict) || errors.Is(err, fencedsql.ErrGuard) {
			t.Errorf("err = %v (%T), want the driver's error as it is", err, err)
		}
		mockMet(t, mock)
	})
	t.Run("duplicate", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect)
		mock.ExpectExec("INSERT INTO accounts (email, `fence_token`, `version`) VALUES (?, ?, 1)").WithArgs("a@b.c", int64(7)).
			WillReturnError(&mysql.MySQLError{Number: 1062, Message: "Duplicate entry 'a@b.c' for key 'accounts.uq_email'"})
		_, err := db.ExecContext(withTok(7), `INSERT INTO accounts (email) VALUES (?)`, "a@b.c")
		if !errors.Is(err, fencedsql.ErrDuplicate) {
			t.Fatalf("err = %v, want ErrDuplicate", err)
		}
		var de *fencedsql.DuplicateError
		if !errors.As(err, &de) || de.Constraint != "accounts.uq_email" {
			t.Errorf("DuplicateError = %+v", de)
		}
		if strings.Contains(err.Error(), "a@b.c") {
			t.Errorf("message %q quotes the duplicated value", err)
		}
		mockMet(t, mock)
	})
}
