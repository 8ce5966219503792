package fencedsql_test

import (
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestSqlmockClaimLockWaitIsClaimConflict (red-team rt64a F2): a driver error the
// dialect classifies as a lock wait ended without the lock (MySQL 1213 here) in a
// claim's own statements — its fencing UPDATE, its read — is ErrClaimConflict wrapping
// the driver's error; the same error of the same locking read without a token (no
// claim), or of a fenced UPDATE, is the driver's own.
func TestSqlmockClaimLockWaitIsClaimConflict(t *testing.T) {
	const (
		in   = "SELECT balance FROM accounts WHERE owner = ? FOR UPDATE"
		pre  = "UPDATE accounts SET `version` = accounts.`version` + 1, `fence_token` = CASE WHEN accounts.`fence_token` <= ? THEN ? ELSE NULL END WHERE owner = ?"
		read = "SELECT balance FROM accounts WHERE (owner = ?) AND accounts.`fence_token` = ? FOR UPDATE"
	)
	deadlock := &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	for _, c := range []struct {
		name     string
		token    bool
		expect   func(sqlmock.Sqlmock)
		stmt     string
		conflict bool
	}{
		{"the claim's fencing UPDATE", true, func(m sqlmock.Sqlmock) {
			m.ExpectExec(pre).WithArgs(7, 7, "bob").WillReturnError(deadlock)
		}, in, true},
		{"the claim's read", true, func(m sqlmock.Sqlmock) {
			m.ExpectExec(pre).WithArgs(7, 7, "bob").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectQuery(read).WithArgs("bob", 7).WillReturnError(deadlock)
		}, in, true},
		{"the read without a token", false, func(m sqlmock.Sqlmock) {
			m.ExpectQuery(in).WithArgs("bob").WillReturnError(deadlock)
		}, in, false},
		{"a fenced UPDATE", true, func(m sqlmock.Sqlmock) {
			m.ExpectExec("UPDATE accounts SET balance = 1, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE owner = ?").
				WithArgs(7, 7, "bob").WillReturnError(deadlock)
		}, "UPDATE accounts SET balance = 1 WHERE owner = ?", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, mock := newMockDB(t, mysqldialect.Dialect)
			mock.ExpectBegin()
			c.expect(mock)
			mock.ExpectRollback()
			ctx := withTok(7)
			if !c.token {
				ctx = t.Context()
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.stmt == in {
				var b int
				err = tx.QueryRowContext(ctx, c.stmt, "bob").Scan(&b)
			} else {
				_, err = tx.ExecContext(ctx, c.stmt, "bob")
			}
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1213 {
				t.Fatalf("%v; want the driver's 1213 inside", err)
			}
			if got := errors.Is(err, fencedsql.ErrClaimConflict); got != c.conflict {
				t.Errorf("%T %v: ErrClaimConflict %v, want %v", err, err, got, c.conflict)
			}
			tx.Rollback() //nolint:errcheck
			mockMet(t, mock)
		})
	}
}

// TestSqlmockGuardedInsertTombstoneWaitIsClaimConflict (red-team rt64a F3): a guarded
// INSERT's lock timeout whose context names the tombstone guard's function (a wait for
// another transaction's claim of the key as absent) is ErrClaimConflict wrapping the
// driver's error; the same lock timeout elsewhere (the table's unique index) is the
// driver's own.
func TestSqlmockGuardedInsertTombstoneWaitIsClaimConflict(t *testing.T) {
	for _, c := range []struct {
		where    string
		conflict bool
	}{
		{"SQL statement \"INSERT INTO \"public\".\"fencedsql_tomb_accounts\" …\"\nPL/pgSQL function public.fencedsql_tombstone_accounts() line 51 at SQL statement", true},
		{"while inserting index tuple (0,9) in relation \"accounts_pkey\"", false},
	} {
		db, mock := newMockDB(t, postgres.Dialect)
		mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(1), int64(7)).
			WillReturnError(&pgconn.PgError{Code: "55P03", Message: "canceling statement due to lock timeout", Where: c.where})
		_, err := db.ExecContext(withTok(7), `INSERT INTO accounts (id) VALUES ($1)`, 1)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55P03" {
			t.Fatalf("%v; want the driver's 55P03 inside", err)
		}
		if got := errors.Is(err, fencedsql.ErrClaimConflict); got != c.conflict {
			t.Errorf("where %q: %T %v: ErrClaimConflict %v, want %v", c.where, err, err, got, c.conflict)
		}
		mockMet(t, mock)
	}
}
