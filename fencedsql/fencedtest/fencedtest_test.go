package fencedtest_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

type dialectCase struct {
	name string
	d    dialect.Dialect
	// the rewritten UPDATE accounts SET balance = balance - ? WHERE id = ? and its
	// arguments for amount 30, id 42, token 7
	update     string
	updateArgs []driver.Value
}

var dialects = []dialectCase{
	{"postgres", postgres.Dialect,
		`UPDATE accounts SET balance = balance - $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`,
		[]driver.Value{30, 42, int64(7)}},
	{"mysql", mysqldialect.Dialect,
		"UPDATE accounts SET balance = balance - ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
		[]driver.Value{30, int64(7), int64(7), 42}},
	{"sqlite", sqlite.Dialect,
		`UPDATE accounts SET balance = balance - ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
		[]driver.Value{30, int64(7), int64(7), 42}},
}

// ph writes a statement with $n placeholders for PostgreSQL and ? for the others.
func ph(d dialect.Dialect, s string) string {
	if d.NumberedParams() {
		return s
	}
	for i := 9; i >= 1; i-- {
		s = strings.ReplaceAll(s, fmt.Sprintf("$%d", i), "?")
	}
	return s
}

// debit is business code: one guarded UPDATE in a transaction.
func debit(ctx context.Context, db *sql.DB, d dialect.Dialect, id, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, ph(d, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`), amount, id); err != nil {
		return err
	}
	return tx.Commit()
}

func met(t *testing.T, m *fencedtest.Mock) {
	t.Helper()
	if err := m.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

func tok(n uint64) context.Context { return fencedsql.WithToken(context.Background(), n) }

// The derived expectation is exactly the rewritten SQL and argument order.
func TestStatementsAreTheRewrite(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			_, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			for _, inTx := range []bool{false, true} {
				got, err := m.Statements(tok(7), inTx, false, ph(dc.d, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`), 30, 42)
				if err != nil {
					t.Fatal(err)
				}
				want := []fencedtest.Statement{{Op: fencedtest.OpExec, SQL: dc.update, Args: dc.updateArgs}}
				if !slices.EqualFunc(got, want, stmtEqual) {
					t.Errorf("inTx=%v: Statements =\n%v\nwant\n%v", inTx, got, want)
				}
			}
		})
	}
}

func stmtEqual(a, b fencedtest.Statement) bool {
	return a.Op == b.Op && a.SQL == b.SQL && a.Failed == b.Failed && slices.Equal(a.Args, b.Args)
}

func TestExpectFencedExecInTransaction(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			m.ExpectBegin()
			m.ExpectFencedExec(ph(dc.d, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`), 7, 30, 42).
				WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit()
			if err := debit(tok(7), db, dc.d, 42, 30); err != nil {
				t.Fatal(err)
			}
			met(t, m)
		})
	}
}

// The same expectation written by hand with plain sqlmock: fencedtest must expect what
// a hand-written, literal expectation expects.
func TestExpectFencedExecEqualsHandWritten(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			m.ExpectBegin()
			m.Sqlmock.ExpectExec(dc.update).WithArgs(dc.updateArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit()
			if err := debit(tok(7), db, dc.d, 42, 30); err != nil {
				t.Fatal(err)
			}
			met(t, m)
		})
	}
}

// A different token, argument or statement from the business code fails the test.
func TestExpectFencedExecCatchesMistakes(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			for name, run := range map[string]func(db *sql.DB) error{
				"other token":  func(db *sql.DB) error { return debit(tok(8), db, dc.d, 42, 30) },
				"other amount": func(db *sql.DB) error { return debit(tok(7), db, dc.d, 42, 31) },
				"other id":     func(db *sql.DB) error { return debit(tok(7), db, dc.d, 41, 30) },
			} {
				db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
				m.ExpectBegin()
				m.ExpectFencedExec(ph(dc.d, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`), 7, 30, 42).
					WillReturnResult(sqlmock.NewResult(0, 1))
				m.ExpectCommit()
				if err := run(db); err == nil {
					t.Errorf("%s: no error", name)
				}
			}
		})
	}
}

func TestExpectFencedQueryReturning(t *testing.T) {
	for _, dc := range dialects {
		if dc.name == "mysql" {
			continue // no RETURNING
		}
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			in := ph(dc.d, `INSERT INTO accounts (owner, balance) VALUES ($1, $2) RETURNING id`)
			m.ExpectFencedQuery(in, 7, "ann", 100).WillReturnRows(sqlmock.NewRows([]string{"id"}).AddRow(int64(5)))
			var id int64
			if err := db.QueryRowContext(tok(7), in, "ann", 100).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if id != 5 {
				t.Errorf("id = %d", id)
			}
			// the rejected variant
			m.ExpectFencedQueryRejection(ph(dc.d, `UPDATE accounts SET balance = $1 WHERE id = $2 RETURNING balance`), 7, 1, 5)
			err := db.QueryRowContext(tok(7), ph(dc.d, `UPDATE accounts SET balance = $1 WHERE id = $2 RETURNING balance`), 1, 5).Scan(&id)
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("err = %v, want ErrFenced", err)
			}
			// DELETE … RETURNING inside a transaction: the fencing UPDATE, then the query
			m.ExpectBegin()
			m.ExpectFencedQuery(ph(dc.d, `DELETE FROM accounts WHERE id = $1 RETURNING id`), 7, 5).
				WillReturnRows(sqlmock.NewRows([]string{"id"}).AddRow(int64(5)))
			m.ExpectCommit()
			tx, err := db.BeginTx(tok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.QueryRowContext(tok(7), ph(dc.d, `DELETE FROM accounts WHERE id = $1 RETURNING id`), 5).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			met(t, m)
		})
	}
}

// Statements on tables that are not guarded are expected as they are.
func TestPassThrough(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			sel := ph(dc.d, `SELECT balance FROM accounts WHERE id = $1`)
			upd := ph(dc.d, `UPDATE audit SET seen = $1`)
			m.ExpectFencedQuery(sel, 7, 42).WillReturnRows(sqlmock.NewRows([]string{"balance"}).AddRow(int64(70)))
			m.ExpectFencedExec(upd, 0, true).WillReturnResult(sqlmock.NewResult(0, 1))
			var b int64
			if err := db.QueryRowContext(tok(7), sel, 42).Scan(&b); err != nil || b != 70 {
				t.Fatalf("balance %d, %v", b, err)
			}
			if _, err := db.ExecContext(context.Background(), upd, true); err != nil {
				t.Fatal(err)
			}
			met(t, m)
		})
	}
}

// sqlmock argument matchers may stand for the user's arguments.
func TestArgumentMatchers(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			m.ExpectBegin()
			m.ExpectFencedExec(ph(dc.d, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`), 7, sqlmock.AnyArg(), 42).
				WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit()
			if err := debit(tok(7), db, dc.d, 42, 12345); err != nil {
				t.Fatal(err)
			}
			met(t, m)
		})
	}
}

// ExpectVersion travels in the context given to the …Context variants.
func TestExpectVersion(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			db, m := fencedtest.New(t, dc.d, fencedsql.Guard("accounts"))
			ctx := fencedsql.ExpectVersion(tok(7), 3)
			in := ph(dc.d, `UPDATE accounts SET balance = $1 WHERE id = $2`)
			stmts, err := m.Statements(ctx, false, false, in, 1, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(stmts) != 1 || !slices.Contains(stmts[0].Args, driver.Value(int64(3))) || !strings.Contains(stmts[0].SQL, "CASE WHEN") {
				t.Fatalf("statements = %v", stmts)
			}
			m.ExpectFencedExecContext(ctx, in, 1, 2).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(ctx, in, 1, 2); err != nil {
				t.Fatal(err)
			}
			// Without the version the statement differs, and sqlmock says so.
			m.ExpectFencedExecContext(ctx, in, 1, 2).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(tok(7), in, 1, 2); err == nil {
				t.Errorf("a statement without the expected version matched")
			}
		})
	}
}
