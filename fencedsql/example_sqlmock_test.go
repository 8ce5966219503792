package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	_ "github.com/fencedsql/fencedsql/dialects/sqlite" // registers "fenced-sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// transfer is business code: it moves amount between two accounts in one transaction.
// The caller's context carries the fencing token of the lock it holds
// (fencedsql.WithLease or fencedsql.WithToken); the transaction is bound to it.
func transfer(ctx context.Context, db *sql.DB, from, to, amount int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance - $1 WHERE id = $2`, amount, from); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + $1 WHERE id = $2`, amount, to); err != nil {
		return err
	}
	return tx.Commit()
}

// Unit-testing business code with go-sqlmock underneath the wrapper: the expectations
// are the SQL and arguments that reach the database after fencing, token included.
func Example_sqlmock() {
	mockDB, mock, err := sqlmock.NewWithDSN("example-sqlmock", sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		panic(err)
	}
	defer mockDB.Close()
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mockDB.Driver(), "example-sqlmock"),
		fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("accounts"),
		fencedsql.WithSchemaCheck(false), // sqlmock would otherwise have to expect the check query
	)
	defer db.Close()

	const (
		debit  = `UPDATE accounts SET balance = balance - $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`
		credit = `UPDATE accounts SET balance = balance + $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`
	)

	// 1. The happy path: both statements carry token 7 as their last argument.
	mock.ExpectBegin()
	mock.ExpectExec(debit).WithArgs(int64(30), int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectExec(credit).WithArgs(int64(30), int64(2), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectCommit()

	ctx := fencedsql.WithToken(context.Background(), 7)
	fmt.Println("transfer with token 7:", transfer(ctx, db, 1, 2, 30))

	// 2. A newer holder already wrote account 2: PostgreSQL reports the NOT NULL
	//    violation on fence_token, which the wrapper turns into ErrFenced.
	mock.ExpectBegin()
	mock.ExpectExec(debit).WithArgs(int64(30), int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	mock.ExpectExec(credit).WithArgs(int64(30), int64(2), int64(7)).
		WillReturnError(&pgconn.PgError{Code: "23502", ColumnName: "fence_token", TableName: "accounts"})
	mock.ExpectRollback()

	err = transfer(ctx, db, 1, 2, 30)
	fmt.Println("fenced:", errors.Is(err, fencedsql.ErrFenced))
	var fe *fencedsql.FencedError
	if errors.As(err, &fe) {
		fmt.Printf("table %s, stale token %d\n", fe.Table, fe.Token)
	}

	// 3. Without a token no write reaches the database: the transaction is begun and
	//    rolled back, and the first UPDATE fails with ErrNoToken before it is sent.
	mock.ExpectBegin()
	mock.ExpectRollback()
	err = transfer(context.Background(), db, 1, 2, 30)
	fmt.Println("no token:", errors.Is(err, fencedsql.ErrNoToken))

	fmt.Println("expectations met:", mock.ExpectationsWereMet() == nil)
	// Output:
	// transfer with token 7: <nil>
	// fenced: true
	// table accounts, stale token 7
	// no token: true
	// expectations met: true
}

// The late write after a pause, on the embedded SQLite: A holds token 7, reads, and is
// paused past its lease; B is granted token 8 and writes; A wakes up and writes with its
// stale token 7. The database refuses it.
func Example_transfer() {
	dir, err := os.MkdirTemp("", "fencedsql-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := "file:" + filepath.Join(dir, "shop.db")
	// Migrations run on a plain connection: the fenced pool refuses DDL on guarded
	// tables.
	plain, err := sql.Open("sqlite", file)
	if err != nil {
		panic(err)
	}
	if _, err := plain.Exec(`CREATE TABLE accounts (
		id          INTEGER PRIMARY KEY,
		balance     INTEGER NOT NULL,
		fence_token BIGINT  NOT NULL DEFAULT 0,
		version     BIGINT  NOT NULL DEFAULT 0)`); err != nil {
		panic(err)
	}
	plain.Close()

	db, err := sql.Open("fenced-sqlite", file+"?fenced_tables=accounts")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	bg := context.Background()
	mustExec := func(ctx context.Context, q string, args ...any) {
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			panic(err)
		}
	}
	mustExec(fencedsql.WithToken(bg, 1), `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 42, 100)

	balance := func(ctx context.Context) (b int64) {
		if err := db.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = ?`, 42).Scan(&b); err != nil {
			panic(err)
		}
		return b
	}
	withdraw := func(ctx context.Context, newBalance int64) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = ? WHERE id = ?`, newBalance, 42); err != nil {
			return err
		}
		return tx.Commit()
	}

	a := fencedsql.WithToken(bg, 7)
	seenByA := balance(a)
	fmt.Println("A (token 7) reads balance", seenByA)
	fmt.Println("A pauses; its lease expires and the lock service grants token 8 to B")

	b := fencedsql.WithToken(bg, 8)
	seenByB := balance(b)
	fmt.Println("B (token 8) reads balance", seenByB)
	if err := withdraw(b, seenByB-30); err != nil {
		panic(err)
	}
	fmt.Println("B (token 8) withdraws 30 and commits")

	err = withdraw(a, seenByA-50)
	fmt.Println("A (token 7) wakes up and withdraws 50:", err)
	fmt.Println("A's write fenced:", errors.Is(err, fencedsql.ErrFenced))

	var bal, tok, ver int64
	if err := db.QueryRowContext(bg, `SELECT balance, fence_token, version FROM accounts WHERE id = 42`).Scan(&bal, &tok, &ver); err != nil {
		panic(err)
	}
	fmt.Printf("balance %d, fence_token %d, version %d\n", bal, tok, ver)
	// Output:
	// A (token 7) reads balance 100
	// A pauses; its lease expires and the lock service grants token 8 to B
	// B (token 8) reads balance 100
	// B (token 8) withdraws 30 and commits
	// A (token 7) wakes up and withdraws 50: fencedsql: write to accounts with token 7 fenced: a newer token already wrote a targeted row; nothing was changed
	// A's write fenced: true
	// balance 70, fence_token 8, version 2
}
