package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guarded write whose unqualified name resolves (search_path) to a same-named table
// without the fencing columns is refused with a *SchemaError on the Exec path; so is
// the same text prepared (db.Prepare, tx.Prepare, a *sql.Conn's PrepareContext),
// before its rewrite is sent to be prepared, not with pgx's `column "version" does not
// exist (SQLSTATE 42703)` (red-team rt48g F1).
func TestPrepareUnfitTableSchemaError(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn,
		guardTableAccounts,
		`CREATE SCHEMA prep_unfit`,
		`CREATE TABLE prep_unfit.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=public.accounts")
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `SET search_path = prep_unfit, public`); err != nil {
		t.Fatal(err)
	}
	tok := fencedsql.WithToken(ctx, 70)
	const q = `UPDATE accounts SET balance = balance + 100 WHERE id = 1`
	if _, err := db.ExecContext(tok, q); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("Exec: %v; want ErrSchema", err)
	}
	schemaErr := func(what string, st *sql.Stmt, err error) {
		t.Helper()
		if err == nil {
			_, err = st.ExecContext(tok)
			st.Close()
			t.Errorf("%s: prepared; its Exec: %v", what, err)
			return
		}
		var se *fencedsql.SchemaError
		if !errors.As(err, &se) || se.Fix == "" {
			t.Errorf("%s: %v; want the *SchemaError of the Exec path", what, err)
		}
	}
	st, err := db.PrepareContext(ctx, q)
	schemaErr("db.Prepare", st, err)

	tx, err := db.BeginTx(tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err = tx.PrepareContext(tok, q)
	schemaErr("tx.Prepare", st, err)
	// Nothing was sent: the transaction is not aborted.
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT 1`).Scan(&n); err != nil {
		t.Errorf("the transaction after the refused Prepare: %v", err)
	}
	_ = tx.Rollback()

	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err = c.PrepareContext(ctx, q)
	schemaErr("conn.Prepare", st, err)
}
