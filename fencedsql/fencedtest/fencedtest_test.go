package fencedtest_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	msqlite "modernc.org/sqlite"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

type dialectCase struct {
	name string
	d    fencedsql.Dialect
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
func ph(d fencedsql.Dialect, s string) string {
	if d.NumberedParams() {
		return s
	}
	for i := 9; i >= 1; i-- {
		s = strings.ReplaceAll(s, fmt.Sprintf("$%d", i), "?")
	}
	return s
}

// debit is business code: one guarded UPDATE in a transaction.
func debit(ctx context.Context, db *sql.DB, d fencedsql.Dialect, id, amount int64) error {
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

// fakeTB records Fatalf and stops the goroutine, as testing.T does.
type fakeTB struct {
	mu       sync.Mutex
	fatal    string
	cleanups []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// fatalOf runs fn on its own goroutine with a fakeTB and returns what it failed with.
func fatalOf(fn func(tb *fakeTB)) string {
	tb := &fakeTB{}
	defer tb.cleanup()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.fatal
}

// Misuse fails the test with a message saying what is wrong.
func TestMisuseFails(t *testing.T) {
	cases := map[string]struct {
		fn   func(tb *fakeTB)
		want string
	}{
		"token 0": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, postgres.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedExec(`UPDATE accounts SET x = $1`, 0, 1)
		}, "refuses"},
		"unsupported statement": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, postgres.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedExec(`UPDATE accounts SET (x, fence_token) = ($1, 0)`, 7, 1)
		}, "refuses"},
		"wrong argument count": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, sqlite.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedExec(`UPDATE accounts SET x = ? WHERE id = ?`, 7, 1)
		}, "refuses"},
		"rejection of an unguarded statement": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, mysqldialect.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedRejection(`UPDATE other SET x = ?`, 7, 1)
		}, "not a fenced write"},
		"bad guard": {func(tb *fakeTB) {
			fencedtest.New(tb, postgres.Dialect, fencedsql.Guard("x y"))
		}, "not a valid identifier"},
		"unknown dialect": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, otherDialect{postgres.Dialect}, fencedsql.Guard("accounts"))
			m.ExpectFencedRejection(`UPDATE accounts SET x = $1`, 7, 1)
		}, `dialect "other"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := fatalOf(c.fn)
			if !strings.Contains(got, c.want) {
				t.Errorf("Fatalf(%q), want a message containing %q", got, c.want)
			}
		})
	}
}

type otherDialect struct{ fencedsql.Dialect }

func (otherDialect) Name() string { return "other" }

func TestFencingErrorIsClassified(t *testing.T) {
	for _, dc := range dialects {
		err, ferr := fencedtest.FencingError(dc.d, "accounts", "fence_token")
		if ferr != nil {
			t.Fatalf("%s: %v", dc.name, ferr)
		}
		info := dc.d.Classify(err)
		if info.Kind != fencedsql.ErrorNotNull || info.Column != "fence_token" {
			t.Errorf("%s: Classify(%v) = %+v", dc.name, err, info)
		}
	}
	if _, err := fencedtest.FencingError(otherDialect{postgres.Dialect}, "a", "b"); err == nil {
		t.Errorf("an unknown dialect has a fencing error")
	}
}
