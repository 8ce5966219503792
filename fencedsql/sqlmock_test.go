package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
)

// exactSQL is a stricter matcher than sqlmock.QueryMatcherEqual (which collapses
// whitespace): the SQL sent must be byte-for-byte the expected text.
var exactSQL = sqlmock.QueryMatcherFunc(func(want, got string) error {
	if want != got {
		return fmt.Errorf("sql differs:\n got  %q\n want %q", got, want)
	}
	return nil
})

var mockSeq atomic.Int64

// newMockDB returns a fenced *sql.DB over a fresh go-sqlmock connection. The default
// options guard "accounts" with the schema check off; opts are appended (and so win).
func newMockDB(t *testing.T, d dialect.Dialect, opts ...fencedsql.Option) (*sql.DB, sqlmock.Sqlmock) {
	t.Helper()
	dsn := fmt.Sprintf("fencedsql-mock-%s-%d", t.Name(), mockSeq.Add(1))
	mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(exactSQL))
	if err != nil {
		t.Fatal(err)
	}
	base := []fencedsql.Option{fencedsql.WithDialect(d), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false)}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), append(base, opts...)...)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		db.Close()
		mdb.Close()
	})
	return db, mock
}

func mockMet(t *testing.T, mock sqlmock.Sqlmock) {
	t.Helper()
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

func withTok(n uint64) context.Context { return fencedsql.WithToken(context.Background(), n) }

type dialectCase struct {
	name string
	d    dialect.Dialect
}

var mockDialects = []dialectCase{
	{"postgres", postgres.Dialect},
	{"mysql", mysqldialect.Dialect},
	{"sqlite", sqlite.Dialect},
}

// sqlFor picks the statement text for a dialect: PostgreSQL numbers its placeholders.
func sqlFor(d string, pg, other string) string {
	if d == "postgres" {
		return pg
	}
	return other
}

// quoteFor writes `x` for MySQL and "x" for the others in s, which uses "x".
func quoteFor(d, s string) string {
	if d == "mysql" {
		return strings.ReplaceAll(s, `"`, "`")
	}
	return s
}

func TestSqlmockUpdate(t *testing.T) {
	want := map[string]struct {
		sql  string
		args []driver.Value
	}{
		"postgres": {`UPDATE accounts SET balance = balance - $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`, []driver.Value{int64(10), int64(42), int64(7)}},
		"mysql":    {"UPDATE accounts SET balance = balance - ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?", []driver.Value{int64(10), int64(7), int64(7), int64(42)}},
		"sqlite":   {`UPDATE accounts SET balance = balance - ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`, []driver.Value{int64(10), int64(7), int64(7), int64(42)}},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			w := want[dc.name]
			mock.ExpectExec(w.sql).WithArgs(w.args...).WillReturnResult(sqlmock.NewResult(0, 1))
			in := sqlFor(dc.name, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, `UPDATE accounts SET balance = balance - ? WHERE id = ?`)
			res, err := db.ExecContext(withTok(7), in, 10, 42)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Errorf("RowsAffected = %d", n)
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockExpectVersion(t *testing.T) {
	want := map[string]struct {
		sql  string
		args []driver.Value
	}{
		"postgres": {`UPDATE accounts SET x = $1, "version" = CASE WHEN "version" = $4 THEN "version" + 1 WHEN "fence_token" <= $3 THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`, []driver.Value{int64(1), int64(42), int64(7), int64(3)}},
		"mysql":    {"UPDATE accounts SET x = ?, `version` = CASE WHEN `version` = ? THEN `version` + 1 WHEN `fence_token` <= ? THEN NULL ELSE `version` END, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?", []driver.Value{int64(1), int64(3), int64(7), int64(7), int64(7), int64(42)}},
		"sqlite":   {`UPDATE accounts SET x = ?, "version" = CASE WHEN "version" = ? THEN "version" + 1 WHEN "fence_token" <= ? THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`, []driver.Value{int64(1), int64(3), int64(7), int64(7), int64(7), int64(42)}},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			w := want[dc.name]
			mock.ExpectExec(w.sql).WithArgs(w.args...).WillReturnResult(sqlmock.NewResult(0, 1))
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1 WHERE id = $2`, `UPDATE accounts SET x = ? WHERE id = ?`)
			if _, err := db.ExecContext(fencedsql.ExpectVersion(withTok(7), 3), in, 1, 42); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockMultiRowInsert(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			if dc.name == "postgres" {
				mock.ExpectExec(`INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $5, 1), ($3, $4, $5, 1)`).
					WithArgs(int64(1), int64(100), int64(2), int64(200), int64(7)).WillReturnResult(sqlmock.NewResult(0, 2))
			} else {
				mock.ExpectExec(quoteFor(dc.name, `INSERT INTO accounts (id, balance, "fence_token", "version") VALUES (?, ?, ?, 1), (?, ?, ?, 1)`)).
					WithArgs(int64(1), int64(100), int64(7), int64(2), int64(200), int64(7)).WillReturnResult(sqlmock.NewResult(0, 2))
			}
			in := sqlFor(dc.name, `INSERT INTO accounts (id, balance) VALUES ($1, $2), ($3, $4)`, `INSERT INTO accounts (id, balance) VALUES (?, ?), (?, ?)`)
			if _, err := db.ExecContext(withTok(7), in, 1, 100, 2, 200); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockUpsert(t *testing.T) {
	cases := map[string]struct {
		in, out string
		args    []driver.Value
	}{
		"postgres": {
			`INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + $3`,
			`INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $4, 1) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + $3, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $4 THEN $4::bigint ELSE NULL END`,
			[]driver.Value{int64(1), int64(100), int64(5), int64(7)},
		},
		"mysql": {
			`INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = balance + ?`,
			"INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1) ON DUPLICATE KEY UPDATE balance = balance + ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END",
			[]driver.Value{int64(1), int64(100), int64(7), int64(5), int64(7), int64(7)},
		},
		"sqlite": {
			`INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = balance + ?`,
			`INSERT INTO accounts (id, balance, "fence_token", "version") VALUES (?, ?, ?, 1) ON CONFLICT (id) DO UPDATE SET balance = balance + ?, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END`,
			[]driver.Value{int64(1), int64(100), int64(7), int64(5), int64(7), int64(7)},
		},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			c := cases[dc.name]
			mock.ExpectExec(c.out).WithArgs(c.args...).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(withTok(7), c.in, 1, 100, 5); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

// deleteSQL returns the user's DELETE and the two statements it becomes.
func deleteSQL(d string) (in, pre string, preArgs []driver.Value, del string, delArgs []driver.Value) {
	switch d {
	case "postgres":
		return `DELETE FROM accounts WHERE id = $1 OR owner = $2`,
			`UPDATE accounts SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $1 OR owner = $2`,
			[]driver.Value{int64(42), "bob", int64(7)},
			`DELETE FROM accounts WHERE (id = $1 OR owner = $2) AND "fence_token" = $3`,
			[]driver.Value{int64(42), "bob", int64(7)}
	default:
		return `DELETE FROM accounts WHERE id = ? OR owner = ?`,
			quoteFor(d, `UPDATE accounts SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ? OR owner = ?`),
			[]driver.Value{int64(7), int64(7), int64(42), "bob"},
			quoteFor(d, `DELETE FROM accounts WHERE (id = ? OR owner = ?) AND "fence_token" = ?`),
			[]driver.Value{int64(42), "bob", int64(7)}
	}
}

func TestSqlmockDeleteOutsideTx(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in, pre, preArgs, del, delArgs := deleteSQL(dc.name)
			mock.ExpectBegin()
			mock.ExpectExec(pre).WithArgs(preArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectExec(del).WithArgs(delArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectCommit()
			res, err := db.ExecContext(withTok(7), in, 42, "bob")
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Errorf("RowsAffected = %d, want the DELETE's 1", n)
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockDeleteInsideTx(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in, pre, preArgs, del, delArgs := deleteSQL(dc.name)
			mock.ExpectBegin()
			mock.ExpectExec(pre).WithArgs(preArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectExec(del).WithArgs(delArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectCommit()
			tx, err := db.BeginTx(withTok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(context.Background(), in, 42, "bob"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

// A fenced DELETE outside a transaction: the fencing UPDATE fails, the wrapper's own
// transaction is rolled back and the DELETE is never sent.
func TestSqlmockDeleteFencedRollsBack(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	in, pre, preArgs, _, _ := deleteSQL("postgres")
	mock.ExpectBegin()
	mock.ExpectExec(pre).WithArgs(preArgs...).WillReturnError(&pgconn.PgError{Code: "23502", ColumnName: "fence_token", TableName: "accounts"})
	mock.ExpectRollback()
	_, err := db.ExecContext(withTok(7), in, 42, "bob")
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("err = %v, want ErrFenced", err)
	}
	mockMet(t, mock)
}

// DELETE … RETURNING needs the caller's transaction; inside one it runs both statements.
func TestSqlmockDeleteReturning(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	in := `DELETE FROM accounts WHERE id = $1 RETURNING id`
	if _, err := db.QueryContext(withTok(7), in, 42); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("outside a transaction: err = %v, want ErrUnsupported", err)
	}
	mockMet(t, mock)

	mock.ExpectBegin()
	mock.ExpectExec(`UPDATE accounts SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`).
		WithArgs(int64(42), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectQuery(`DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2 RETURNING id`).
		WithArgs(int64(42), int64(7)).WillReturnRows(sqlmock.NewRows([]string{"id"}).AddRow(int64(42)))
	mock.ExpectCommit()
	tx, err := db.BeginTx(withTok(7), nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(context.Background(), in, 42).Scan(&id); err != nil || id != 42 {
		t.Fatalf("id, err = %d, %v", id, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)
}

func TestSqlmockUpdateReturning(t *testing.T) {
	cases := map[string]struct {
		in, out string
		args    []driver.Value
	}{
		"postgres": {
			`UPDATE accounts SET balance = balance + $1 WHERE id = $2 RETURNING balance, version`,
			`UPDATE accounts SET balance = balance + $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2 RETURNING balance, version`,
			[]driver.Value{int64(5), int64(42), int64(7)},
		},
		"mysql": { // MariaDB 10.5+ has no UPDATE … RETURNING, but the rewrite is the same
			`UPDATE accounts SET balance = balance + ? WHERE id = ? RETURNING balance, version`,
			"UPDATE accounts SET balance = balance + ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ? RETURNING balance, version",
			[]driver.Value{int64(5), int64(7), int64(7), int64(42)},
		},
		"sqlite": {
			`UPDATE accounts SET balance = balance + ? WHERE id = ? RETURNING balance, version`,
			`UPDATE accounts SET balance = balance + ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ? RETURNING balance, version`,
			[]driver.Value{int64(5), int64(7), int64(7), int64(42)},
		},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			c := cases[dc.name]
			mock.ExpectQuery(c.out).WithArgs(c.args...).
				WillReturnRows(sqlmock.NewRows([]string{"balance", "version"}).AddRow(int64(105), int64(4)))
			var bal, ver int64
			if err := db.QueryRowContext(withTok(7), c.in, 5, 42).Scan(&bal, &ver); err != nil {
				t.Fatal(err)
			}
			if bal != 105 || ver != 4 {
				t.Errorf("balance, version = %d, %d", bal, ver)
			}
			mockMet(t, mock)
		})
	}
}

// PostgreSQL reports the NOT NULL violation of an UPDATE … RETURNING while rows stream:
// the error from rows.Err must be mapped as well.
func TestSqlmockReturningRowErrorMapped(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	mock.ExpectQuery(`UPDATE accounts SET x = 1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $1 THEN $1::bigint ELSE NULL END RETURNING id`).
		WithArgs(int64(7)).
		WillReturnRows(sqlmock.NewRows([]string{"id"}).AddRow(int64(1)).AddRow(int64(2)).
			RowError(1, &pgconn.PgError{Code: "23502", ColumnName: "fence_token"}))
	rows, err := db.QueryContext(withTok(7), `UPDATE accounts SET x = 1 RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	err = rows.Err()
	rows.Close()
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("rows.Err() = %v, want ErrFenced", err)
	}
	mockMet(t, mock)
}

// One prepared statement (docs/design.md, G5) serves transactions with different tokens; the token is
// a bind argument, not SQL text.
func TestSqlmockPreparedAcrossTokens(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET balance = $1 WHERE id = $2`, `UPDATE accounts SET balance = ? WHERE id = ?`)
			out := map[string]string{
				"postgres": `UPDATE accounts SET balance = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`,
				"mysql":    "UPDATE accounts SET balance = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
				"sqlite":   `UPDATE accounts SET balance = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
			}[dc.name]
			args := func(tk int64) []driver.Value {
				if dc.name == "postgres" {
					return []driver.Value{int64(100), int64(42), tk}
				}
				return []driver.Value{int64(100), tk, tk, int64(42)}
			}
			prep := mock.ExpectPrepare(out)
			mock.ExpectBegin()
			prep.ExpectExec().WithArgs(args(7)...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectCommit()
			mock.ExpectBegin()
			prep.ExpectExec().WithArgs(args(8)...).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectCommit()

			stmt, err := db.PrepareContext(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			defer stmt.Close()
			for _, tk := range []uint64{7, 8} {
				ctx := withTok(tk)
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, 100, 42); err != nil {
					t.Fatalf("token %d: %v", tk, err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			mockMet(t, mock)
		})
	}
}

// A prepared statement outside a transaction takes the token from each call's context,
// and database/sql counts only the caller's placeholders (NumInput).
func TestSqlmockPreparedOutsideTx(t *testing.T) {
	db, mock := newMockDB(t, mysqldialect.Dialect)
	out := "INSERT INTO accounts (id, `fence_token`, `version`) VALUES (?, ?, 1)"
	prep := mock.ExpectPrepare(out)
	prep.ExpectExec().WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(1, 1))
	prep.ExpectExec().WithArgs(int64(2), int64(9)).WillReturnResult(sqlmock.NewResult(2, 1))
	stmt, err := db.Prepare(`INSERT INTO accounts (id) VALUES (?)`)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if _, err := stmt.ExecContext(withTok(7), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecContext(withTok(9), 2); err != nil {
		t.Fatal(err)
	}
	if _, err := stmt.ExecContext(withTok(9), 3, 4); err == nil {
		t.Error("two arguments for one placeholder: no error")
	}
	if _, err := stmt.ExecContext(context.Background(), 5); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("no token: err = %v, want ErrNoToken", err)
	}
	mockMet(t, mock)
}

// A transaction begun with WithToken binds its token: statements inside carry it
// whatever their own context says.
func TestSqlmockTxBoundToken(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	out := `UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`
	mock.ExpectBegin()
	mock.ExpectExec(out).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectExec(out).WithArgs(int64(2), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectCommit()
	tx, err := db.BeginTx(withTok(7), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(context.Background(), `UPDATE accounts SET x = $1`, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(withTok(99), `UPDATE accounts SET x = $1`, 2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)

	// After the transaction the connection is not bound any more.
	if _, err := db.ExecContext(context.Background(), `UPDATE accounts SET x = $1`, 3); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("after commit: err = %v, want ErrNoToken", err)
	}
	mockMet(t, mock)
}

func TestSqlmockLeaseOutsideTx(t *testing.T) {
	db, mock := newMockDB(t, sqlite.Dialect)
	mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES (?, ?, 1)`).
		WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(1, 1))
	l := newFakeLease(7)
	if _, err := db.ExecContext(fencedsql.WithLease(context.Background(), l), `INSERT INTO accounts (id) VALUES (?)`, 1); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)
}

func TestSqlmockNoToken(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1`, `UPDATE accounts SET x = ?`)
			for name, ctx := range map[string]context.Context{
				"no token":  context.Background(),
				"token 0":   withTok(0),
				"nil lease": fencedsql.WithLease(context.Background(), nil),
				"too large": withTok(1 << 63),
			} {
				_, err := db.ExecContext(ctx, in, 1)
				if !errors.Is(err, fencedsql.ErrNoToken) {
					t.Errorf("%s: err = %v, want ErrNoToken", name, err)
				}
				var nt *fencedsql.NoTokenError
				if !errors.As(err, &nt) || nt.Table != "accounts" {
					t.Errorf("%s: err = %#v, want *NoTokenError for accounts", name, err)
				}
			}
			if _, err := db.QueryContext(context.Background(), in+" RETURNING id", 1); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("query: err = %v, want ErrNoToken", err)
			}
			del := sqlFor(dc.name, `DELETE FROM accounts WHERE id = $1`, `DELETE FROM accounts WHERE id = ?`)
			if _, err := db.ExecContext(context.Background(), del, 1); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("delete: err = %v, want ErrNoToken", err)
			}
			mockMet(t, mock) // nothing was sent

			// In a transaction without a token as well.
			mock.ExpectBegin()
			mock.ExpectRollback()
			tx, err := db.BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(in, 1); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("in tx: err = %v, want ErrNoToken", err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockUnsupportedNotSent(t *testing.T) {
	for _, c := range []struct {
		d  dialectCase
		in string
	}{
		{mockDialects[0], `MERGE INTO accounts USING other ON accounts.id = other.id WHEN MATCHED THEN UPDATE SET x = 1`},
		{mockDialects[0], `TRUNCATE accounts`},
		{mockDialects[0], `UPDATE accounts SET (x, fence_token) = (1, 0)`},
		{mockDialects[1], `UPDATE accounts JOIN other USING (id) SET accounts.x = 1`},
		{mockDialects[1], `INSERT IGNORE INTO accounts (id) VALUES (?)`},
		{mockDialects[2], `INSERT OR REPLACE INTO accounts (id) VALUES (?)`},
		{mockDialects[2], `UPDATE accounts SET x = 1; DELETE FROM accounts`},
	} {
		t.Run(c.d.name, func(t *testing.T) {
			db, mock := newMockDB(t, c.d.d)
			var args []any
			if strings.Contains(c.in, "?") {
				args = append(args, 1)
			}
			_, err := db.ExecContext(withTok(7), c.in, args...)
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Exec(%q) = %v, want ErrUnsupported", c.in, err)
			}
			_, err = db.PrepareContext(withTok(7), c.in)
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Prepare(%q) = %v, want ErrUnsupported", c.in, err)
			}
			rows, err := db.QueryContext(withTok(7), c.in, args...)
			if err == nil {
				rows.Close()
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Query(%q) = %v, want ErrUnsupported", c.in, err)
			}
			mockMet(t, mock)
		})
	}
}

// Statements that write no guarded table reach the driver byte for byte.
func TestSqlmockPassThroughIdentical(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			q := sqlFor(dc.name,
				"  SELECT id,  balance\n\tFROM accounts /* accounts */ WHERE id = $1 -- x\n FOR UPDATE ",
				"  SELECT id,  balance\n\tFROM accounts /* accounts */ WHERE id = ? -- x\n FOR UPDATE ")
			mock.ExpectQuery(q).WithArgs(int64(42)).WillReturnRows(sqlmock.NewRows([]string{"id", "balance"}).AddRow(int64(42), int64(5)))
			rows, err := db.QueryContext(context.Background(), q, 42)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
			e := sqlFor(dc.name, "UPDATE   other SET x = $1\n", "UPDATE   other SET x = ?\n")
			mock.ExpectExec(e).WithArgs(int64(1)).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(context.Background(), e, 1); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

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

// fakeLease is a fencedsql.Lease whose loss the test controls.
type fakeLease struct {
	tok  uint64
	lost chan struct{}
	err  atomic.Pointer[error]
}

func newFakeLease(tok uint64) *fakeLease { return &fakeLease{tok: tok, lost: make(chan struct{})} }

func (l *fakeLease) Token() uint64         { return l.tok }
func (l *fakeLease) Lost() <-chan struct{} { return l.lost }
func (l *fakeLease) Err() error {
	if p := l.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *fakeLease) lose(err error) {
	if err != nil {
		l.err.Store(&err)
	}
	close(l.lost)
}

// A lease lost before Commit: the transaction is rolled back, and Commit reports
// lockclient.ErrLeaseLost.
func TestSqlmockLeaseLostAtCommit(t *testing.T) {
	for name, cause := range map[string]error{
		"wrapped ErrLeaseLost": fmt.Errorf("%w: renewal refused", lockclient.ErrLeaseLost),
		"other cause":          errors.New("watchdog gave up"),
		"no cause":             nil,
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, postgres.Dialect)
			mock.ExpectBegin()
			mock.ExpectExec(`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`).
				WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
			mock.ExpectRollback()
			lease := newFakeLease(7)
			ctx := fencedsql.WithLease(context.Background(), lease)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE accounts SET x = $1`, 1); err != nil {
				t.Fatal(err)
			}
			lease.lose(cause)
			err = tx.Commit()
			if !errors.Is(err, lockclient.ErrLeaseLost) {
				t.Fatalf("Commit = %v, want ErrLeaseLost", err)
			}
			if cause != nil && !errors.Is(err, cause) {
				t.Errorf("Commit = %v, want the cause %v reachable", err, cause)
			}
			mockMet(t, mock)
		})
	}
}

// A lease still held at Commit commits normally.
func TestSqlmockLeaseHeldCommits(t *testing.T) {
	db, mock := newMockDB(t, postgres.Dialect)
	mock.ExpectBegin()
	mock.ExpectCommit()
	tx, err := db.BeginTx(fencedsql.WithLease(context.Background(), newFakeLease(7)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mockMet(t, mock)
}

func TestSqlmockArgumentCountMismatch(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1 WHERE id = $2`, `UPDATE accounts SET x = ? WHERE id = ?`)
			if _, err := db.ExecContext(withTok(7), in, 1); err == nil {
				t.Error("one argument for two placeholders: no error")
			}
			if _, err := db.ExecContext(withTok(7), in, 1, 2, 3); err == nil {
				t.Error("three arguments for two placeholders: no error")
			}
			del := sqlFor(dc.name, `DELETE FROM accounts WHERE id = $1`, `DELETE FROM accounts WHERE id = ?`)
			if _, err := db.ExecContext(withTok(7), del); err == nil {
				t.Error("DELETE without its argument: no error")
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockNamedArgsRefused(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1 WHERE id = $2`, `UPDATE accounts SET x = ? WHERE id = ?`)
			_, err := db.ExecContext(withTok(7), in, sql.Named("x", 1), sql.Named("id", 2))
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("err = %v, want ErrUnsupported", err)
			}
			mockMet(t, mock)
		})
	}
}

// ---- the lazy schema and session checks ----

const (
	pgColumns     = `SELECT a.attname::text, CASE WHEN a.attnotnull THEN 1 ELSE 0 END FROM pg_catalog.pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`
	mysqlColumns  = "SELECT COLUMN_NAME, IF(IS_NULLABLE = 'NO', 1, 0) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?"
	sqliteColumns = `SELECT name, "notnull" FROM pragma_table_info(?)`
	mysqlSession  = "SELECT CONCAT_WS(' ', @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.sql_log_bin)"
	pgSession     = "SELECT current_setting('standard_conforming_strings') || ' ' || current_setting('client_encoding') || ' ' || s.setting || ' ' || s.source FROM pg_catalog.pg_settings s WHERE s.name = 'synchronous_commit'"
	pgGood        = "on UTF8 on configuration file"
	strictMode    = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
	mysqlGood     = strictMode + " utf8mb4 1"
)

func columnRows(cols ...string) *sqlmock.Rows {
	r := sqlmock.NewRows([]string{"name", "notnull"})
	for _, c := range cols {
		name, nn, _ := strings.Cut(c, ":")
		r.AddRow(name, nn)
	}
	return r
}

var goodColumns = []string{"id:1", "balance:1", "fence_token:1", "version:1"}

func TestSchemaCheckCachedPerTable(t *testing.T) {
	type setup struct {
		colsQuery string
		colsArgs  []driver.Value
		session   bool
		update    string
		updArgs   []driver.Value
		in        string
	}
	setups := map[string]setup{
		"postgres": {pgColumns, []driver.Value{"accounts"}, false,
			`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`, []driver.Value{int64(1), int64(7)},
			`UPDATE accounts SET x = $1`},
		"mysql": {mysqlColumns, []driver.Value{"", "accounts"}, true,
			"UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END", []driver.Value{int64(1), int64(7), int64(7)},
			`UPDATE accounts SET x = ?`},
		"sqlite": {sqliteColumns, []driver.Value{"accounts"}, false,
			`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`, []driver.Value{int64(1), int64(7), int64(7)},
			`UPDATE accounts SET x = ?`},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			s := setups[dc.name]
			db, mock := newMockDB(t, dc.d, fencedsql.WithSchemaCheck(true))
			expectOpen(mock, dc.d, s.colsArgs)
			if s.session {
				mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"@@SESSION.sql_mode"}).AddRow(mysqlGood))
			}
			expectPGSession(mock, dc.d)
			mock.ExpectQuery(s.colsQuery).WithArgs(s.colsArgs...).WillReturnRows(columnRows(goodColumns...))
			expectLint(t, mock, dc.d, "accounts")
			mock.ExpectExec(s.update).WithArgs(s.updArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			// The second write sends no column check query (nor a session query, but on
			// PostgreSQL under a driver that does not track the session, sqlmock here).
			expectPGSession(mock, dc.d)
			mock.ExpectExec(s.update).WithArgs(s.updArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			for range 2 {
				if _, err := db.ExecContext(withTok(7), s.in, 1); err != nil {
					t.Fatal(err)
				}
			}
			mockMet(t, mock)
		})
	}
}

func TestSchemaCheckMissingColumn(t *testing.T) {
	cases := map[string]struct {
		d     dialect.Dialect
		query string
		args  []driver.Value
		in    string
		ddl   string
		out   string
		oargs []driver.Value
	}{
		"postgres": {postgres.Dialect, pgColumns, []driver.Value{"accounts"}, `UPDATE accounts SET x = $1`,
			`ALTER TABLE accounts ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0`,
			`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`,
			[]driver.Value{int64(1), int64(7)}},
		"sqlite": {sqlite.Dialect, sqliteColumns, []driver.Value{"accounts"}, `UPDATE accounts SET x = ?`,
			`ALTER TABLE accounts ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0`,
			`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`,
			[]driver.Value{int64(1), int64(7), int64(7)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, c.d, fencedsql.WithSchemaCheck(true))
			expectOpen(mock, c.d, c.args)
			expectPGSession(mock, c.d)
			mock.ExpectQuery(c.query).WithArgs(c.args...).WillReturnRows(columnRows("id:1", "fence_token:1"))
			_, err := db.ExecContext(withTok(7), c.in, 1)
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("err = %v, want ErrSchema", err)
			}
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || se.Table != "accounts" {
				t.Errorf("SchemaError = %+v", se)
			}
			if !strings.Contains(err.Error(), c.ddl) {
				t.Errorf("message %q lacks the DDL %q", err, c.ddl)
			}
			mockMet(t, mock)

			// Failures are not cached: once the column exists the write goes through.
			expectPGSession(mock, c.d)
			mock.ExpectQuery(c.query).WithArgs(c.args...).WillReturnRows(columnRows(goodColumns...))
			expectLint(t, mock, c.d, "accounts")
			mock.ExpectExec(c.out).WithArgs(c.oargs...).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(withTok(7), c.in, 1); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

func TestSchemaCheckFailures(t *testing.T) {
	t.Run("both columns missing (mysql)", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect, fencedsql.WithSchemaCheck(true))
		expectOpen(mock, mysqldialect.Dialect, []driver.Value{"", "accounts"})
		mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(mysqlGood))
		mock.ExpectQuery(mysqlColumns).WithArgs("", "accounts").WillReturnRows(columnRows("id:1"))
		_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1)
		if !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("err = %v, want ErrSchema", err)
		}
		ddl := "ALTER TABLE accounts ADD COLUMN `fence_token` BIGINT NOT NULL DEFAULT 0, ADD COLUMN `version` BIGINT NOT NULL DEFAULT 0"
		if !strings.Contains(err.Error(), ddl) {
			t.Errorf("message %q lacks %q", err, ddl)
		}
		mockMet(t, mock)
	})
	t.Run("nullable token column", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.WithSchemaCheck(true))
		expectOpen(mock, postgres.Dialect, []driver.Value{"accounts"})
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows("id:1", "fence_token:0", "version:1"))
		_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 1)
		if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "fence_token") {
			t.Fatalf("err = %v, want ErrSchema naming fence_token", err)
		}
		mockMet(t, mock)
	})
	t.Run("no such table", func(t *testing.T) {
		// A listed table that does not exist fails the pool's first connection, whatever
		// the statement (here one that does not even name it): a typo in fenced_tables
		// never leaves the table meant unguarded without a word.
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.WithSchemaCheck(true))
		mock.ExpectQuery(postgres.Dialect.(dialect.Registrar).RegistryExistsQuery()).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(0)))
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows())
		_, err := db.ExecContext(withTok(7), `UPDATE other SET x = $1`, 1)
		var se *fencedsql.SchemaError
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "accounts" || !strings.Contains(err.Error(), "no such table") {
			t.Fatalf("err = %v, want ErrSchema naming accounts", err)
		}
		mockMet(t, mock)
	})
	t.Run("check query fails, then succeeds", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.WithSchemaCheck(true))
		boom := errors.New("boom")
		expectOpen(mock, postgres.Dialect, []driver.Value{"accounts"})
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnError(boom)
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows(goodColumns...))
		mock.ExpectExec(`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`).
			WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 1)
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.Is(err, boom) {
			t.Fatalf("err = %v, want ErrSchema wrapping the query's error", err)
		}
		if _, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 1); err != nil {
			t.Fatal(err)
		}
		mockMet(t, mock)
	})
	t.Run("schema-qualified guard", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.Guard("shop.orders"), fencedsql.WithSchemaCheck(true))
		expectOpen(mock, postgres.Dialect, []driver.Value{"accounts"}, []driver.Value{"shop.orders"})
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("shop.orders").WillReturnRows(columnRows(goodColumns...))
		mock.ExpectExec(`INSERT INTO shop.orders (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		// another guarded table is checked on its own first write
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows(goodColumns...))
		mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectExec(`INSERT INTO shop.orders (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(2), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		for _, s := range []struct {
			q  string
			id int
		}{{`INSERT INTO shop.orders (id) VALUES ($1)`, 1}, {`INSERT INTO accounts (id) VALUES ($1)`, 1}, {`INSERT INTO shop.orders (id) VALUES ($1)`, 2}} {
			if _, err := db.ExecContext(withTok(7), s.q, s.id); err != nil {
				t.Fatal(err)
			}
		}
		mockMet(t, mock)
	})
	t.Run("custom columns", func(t *testing.T) {
		db, mock := newMockDB(t, sqlite.Dialect, fencedsql.Guard("jobs", fencedsql.TokenColumn("ft"), fencedsql.VersionColumn("ver")), fencedsql.WithSchemaCheck(true))
		expectOpen(mock, sqlite.Dialect, []driver.Value{"accounts"}, []driver.Value{"jobs"})
		mock.ExpectQuery(sqliteColumns).WithArgs("jobs").WillReturnRows(columnRows("id:1", "fence_token:1", "version:1"))
		_, err := db.ExecContext(withTok(7), `UPDATE jobs SET state = ?`, "done")
		if !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("err = %v, want ErrSchema", err)
		}
		for _, want := range []string{`ADD COLUMN "ft" BIGINT NOT NULL DEFAULT 0`, `ADD COLUMN "ver" BIGINT NOT NULL DEFAULT 0`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
		mockMet(t, mock)
	})
}

func TestSessionCheckMySQL(t *testing.T) {
	for name, mode := range map[string]string{
		"not strict":           "NO_ENGINE_SUBSTITUTION",
		"empty":                "",
		"ANSI_QUOTES":          "STRICT_TRANS_TABLES,ANSI_QUOTES",
		"NO_BACKSLASH_ESCAPES": "STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES",
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, mysqldialect.Dialect, fencedsql.WithSchemaCheck(true))
			expectOpenAccounts(mock, mysqldialect.Dialect)
			mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(mode + " utf8mb4"))
			_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1)
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("err = %v, want ErrSchema", err)
			}
			mockMet(t, mock) // neither the column check nor the write was sent
		})
	}

	t.Run("SET sql_mode makes the session check run again", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect, fencedsql.WithSchemaCheck(true))
		expectOpenAccounts(mock, mysqldialect.Dialect)
		upd := "UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"
		mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(mysqlGood))
		mock.ExpectQuery(mysqlColumns).WithArgs("", "accounts").WillReturnRows(columnRows(goodColumns...))
		mock.ExpectExec(upd).WithArgs(int64(1), int64(7), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		mock.ExpectExec("SET SESSION sql_mode = ''").WillReturnResult(sqlmock.NewResult(0, 0))
		mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(" utf8mb4"))
		if _, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(context.Background(), "SET SESSION sql_mode = ''"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1); !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("after SET sql_mode: err = %v, want ErrSchema", err)
		}
		mockMet(t, mock)
	})
}

// expectPGSession expects PostgreSQL's session query, which runs before every guarded
// write under a driver that does not track the session (sqlmock).
// expectOpen expects a pool's first-connection checks (schema check on): the registry
// lookup, answered "none", then one column query per listed table (args each), which
// finds the table.
func expectOpen(mock sqlmock.Sqlmock, d dialect.Dialect, args ...[]driver.Value) {
	mock.ExpectQuery(d.(dialect.Registrar).RegistryExistsQuery()).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(0)))
	q, _ := d.ColumnsQuery(dialect.TableName{Name: "x"})
	for _, a := range args {
		mock.ExpectQuery(q).WithArgs(a...).WillReturnRows(columnRows(goodColumns...))
	}
}

// expectOpenAccounts is expectOpen for the one listed table of newMockDB, accounts.
func expectOpenAccounts(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if d.Name() == "mysql" {
		expectOpen(mock, d, []driver.Value{"", "accounts"})
		return
	}
	expectOpen(mock, d, []driver.Value{"accounts"})
}

func expectPGSession(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if d.Name() == "postgres" {
		mock.ExpectQuery(pgSession).WillReturnRows(sqlmock.NewRows([]string{"s"}).AddRow(pgGood))
	}
}

// goodSession is a session check value every dialect accepts.
func goodSession(d dialect.Dialect) string {
	if d.Name() == "postgres" {
		return pgGood
	}
	return mysqlGood
}
