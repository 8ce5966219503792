// Fenced writes over go-sqlmock: UPDATE, ExpectVersion, INSERT, upserts, DELETE and RETURNING, byte for byte.

package fencedsql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

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
