package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guarded table without its fencing columns (red-team rt48g F1): a guarded write
// prepared on it (db.Prepare, tx.Prepare) fails with the *SchemaError the Exec path
// returns, nothing sent to be prepared, not with the server's "Unknown column". A
// locking read prepared on it is prepared as written (its claim on first use with a
// token): it runs without a token as Exec runs it, and with one it fails with the same
// *SchemaError.
func TestPrepareUnfitTableSchemaError(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	tok := fencedsql.WithToken(ctx, 7)
	const upd = `UPDATE accounts SET balance = 6 WHERE id = 1`
	if _, err := db.ExecContext(tok, upd); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("Exec: %v; want ErrSchema", err)
	}
	schemaErr := func(what string, st *sql.Stmt, err error) {
		t.Helper()
		if err == nil {
			st.Close()
		}
		var se *fencedsql.SchemaError
		if !errors.As(err, &se) || se.Fix == "" {
			t.Errorf("%s: %v; want the *SchemaError of the Exec path", what, err)
		}
	}
	st, err := db.PrepareContext(tok, upd)
	schemaErr("db.Prepare", st, err)
	tx, err := db.BeginTx(tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err = tx.PrepareContext(tok, upd)
	schemaErr("tx.Prepare", st, err)
	_ = tx.Rollback()

	const claim = `SELECT balance FROM accounts WHERE id = 1 FOR UPDATE`
	for _, bound := range []bool{false, true} {
		ctx := ctx
		if bound {
			ctx = tok
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		st, err := tx.PrepareContext(ctx, claim)
		if err != nil {
			t.Fatalf("Prepare of the locking read: %v; want it prepared as written", err)
		}
		var bal int64
		err = st.QueryRowContext(ctx).Scan(&bal)
		if !bound && (err != nil || bal != 5) {
			t.Errorf("the locking read without a token: %d, %v; want 5 as Exec reads it", bal, err)
		}
		if bound && !errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("the locking read with a token: %v; want ErrSchema", err)
		}
		st.Close()
		_ = tx.Rollback()
	}
}
