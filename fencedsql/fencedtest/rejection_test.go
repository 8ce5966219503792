// Tests of rejection expectations and the dialects' fencing errors.

package fencedtest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

func TestExpectFencedRejection(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			m.ExpectBegin()
			m.ExpectFencedRejection(ph(dc.d, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`), 7, 30, 42)
			m.ExpectRollback()
			err := debit(tok(7), db, dc.d, 42, 30)
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("err = %v, want ErrFenced", err)
			}
			var fe *fencedsql.FencedError
			if !errors.As(err, &fe) || fe.Table != "accounts" || fe.Token != 7 {
				t.Errorf("FencedError = %+v", fe)
			}
			// The driver's own error type is reachable, as against a real database.
			switch dc.name {
			case "postgres":
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "23502" || pe.ColumnName != "fence_token" || pe.TableName != "accounts" {
					t.Errorf("PgError = %+v", pe)
				}
			case "mysql":
				var me *mysql.MySQLError
				if !errors.As(err, &me) || me.Number != 1048 {
					t.Errorf("MySQLError = %+v", me)
				}
			case "sqlite":
				var se *msqlite.Error
				if !errors.As(err, &se) || !strings.Contains(se.Error(), "NOT NULL constraint failed: accounts.fence_token") {
					t.Errorf("sqlite.Error = %v", se)
				}
			}
			met(t, m)
		})
	}
}

// Outside a transaction, a DELETE is the wrapper's own transaction: BEGIN, the fencing
// UPDATE, the DELETE, COMMIT.
func TestDeleteOutsideTransaction(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			in := ph(dc.d, `DELETE FROM accounts WHERE id = $1`)
			stmts, err := m.Statements(tok(7), false, false, in, 42)
			if err != nil {
				t.Fatal(err)
			}
			ops := make([]fencedtest.Op, len(stmts))
			for i, s := range stmts {
				ops[i] = s.Op
			}
			if want := []fencedtest.Op{fencedtest.OpBegin, fencedtest.OpExec, fencedtest.OpExec, fencedtest.OpCommit}; !slices.Equal(ops, want) {
				t.Fatalf("ops = %v, want %v", ops, want)
			}
			if !strings.HasPrefix(stmts[1].SQL, "UPDATE accounts SET ") || !strings.HasPrefix(stmts[2].SQL, "DELETE FROM accounts WHERE (id = ") {
				t.Errorf("statements = %v", stmts)
			}
			m.ExpectFencedExec(in, 7, 42).WillReturnResult(sqlmock.NewResult(0, 1))
			res, err := db.ExecContext(tok(7), in, 42)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Errorf("RowsAffected = %d", n)
			}
			met(t, m)
		})
	}
}

func TestDeleteInTransaction(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			in := ph(dc.d, `DELETE FROM accounts WHERE id = $1`)
			m.ExpectBegin()
			m.ExpectFencedExec(in, 7, 42).WillReturnResult(sqlmock.NewResult(0, 3))
			m.ExpectCommit()
			tx, err := db.BeginTx(tok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tx.ExecContext(context.Background(), in, 42) // the transaction carries the token
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 3 {
				t.Errorf("RowsAffected = %d", n)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			met(t, m)
		})
	}
}

func TestDeleteRejection(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			in := ph(dc.d, `DELETE FROM accounts WHERE id = $1`)
			// outside a transaction: the wrapper's own one is rolled back
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			m.ExpectFencedRejection(in, 7, 42)
			if _, err := db.ExecContext(tok(7), in, 42); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("outside a transaction: err = %v, want ErrFenced", err)
			}
			met(t, m)
			// inside the caller's
			db, m = fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			m.ExpectBegin()
			m.ExpectFencedRejection(in, 7, 42)
			m.ExpectRollback()
			tx, err := db.BeginTx(tok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(tok(7), in, 42); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("in a transaction: err = %v, want ErrFenced", err)
			}
			tx.Rollback()
			met(t, m)
		})
	}
}

// The token column is found whatever it is called, and the error names the guarded
// table, also when it is schema-qualified.
func TestRejectionCustomColumnsAndSchema(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("shop.jobs", fencedsql.TokenColumn("lease_tok"), fencedsql.VersionColumn("rev")))
			in := ph(dc.d, `UPDATE shop.jobs SET state = $1 WHERE id = $2`)
			m.ExpectFencedRejection(in, 9, "done", 1)
			_, err := db.ExecContext(tok(9), in, "done", 1)
			var fe *fencedsql.FencedError
			if !errors.As(err, &fe) || fe.Table != "shop.jobs" || fe.Token != 9 {
				t.Fatalf("err = %v, want a FencedError on shop.jobs with token 9", err)
			}
			met(t, m)
		})
	}
}

func TestFencingErrorIsClassified(t *testing.T) {
	for _, dc := range dialects {
		err, ferr := fencedtest.FencingError(dc.d, "accounts", "fence_token")
		if ferr != nil {
			t.Fatalf("%s: %v", dc.name, ferr)
		}
		info := dc.d.Classify(err)
		if info.Kind != dialect.ErrorNotNull || info.Column != "fence_token" {
			t.Errorf("%s: Classify(%v) = %+v", dc.name, err, info)
		}
	}
	if _, err := fencedtest.FencingError(otherDialect{postgres.Dialect}, "a", "b"); err == nil {
		t.Errorf("an unknown dialect has a fencing error")
	}
}
