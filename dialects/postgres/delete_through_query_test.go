package postgres_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestDeleteThroughQueryRunsAsExec: a plain `DELETE FROM accounts WHERE id = 1` (no
// RETURNING) sent with QueryContext — as database/sql allows for any statement, and as
// ORMs' raw-SQL helpers and QueryRowContext(…).Scan(…) callers do — runs as Exec runs
// it: the two-statement DELETE (no guard installed), counted on the rows affected, in
// the wrapper's own transaction outside the caller's. It answers with no rows; the row
// is deleted and the caller's transaction commits, in a transaction, prepared, and in
// autocommit.
func TestDeleteThroughQueryRunsAsExec(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, selectOnlyTable)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	reset := func() {
		t.Helper()
		if _, err := raw.Exec(`DELETE FROM accounts; INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 5, 3, 1)`); err != nil {
			t.Fatal(err)
		}
	}
	remaining := func() int {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM accounts WHERE id = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ctx := fencedsql.WithToken(context.Background(), 8)
	t.Run("transaction", func(t *testing.T) {
		reset()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, `DELETE FROM accounts WHERE id = 1`)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err != nil {
			t.Errorf("DELETE through QueryContext: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("Commit: %v", err)
		}
		if n := remaining(); n != 0 {
			t.Errorf("row 1 still there (%d): the DELETE did not take effect", n)
		}
	})
	t.Run("prepared", func(t *testing.T) {
		reset()
		st, err := db.PrepareContext(ctx, `DELETE FROM accounts WHERE id = $1`)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, 1)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err != nil {
			t.Errorf("prepared DELETE through QueryContext: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("Commit: %v", err)
		}
		if n := remaining(); n != 0 {
			t.Errorf("row 1 still there (%d): the DELETE did not take effect", n)
		}
	})
	t.Run("autocommit", func(t *testing.T) {
		reset()
		rows, err := db.QueryContext(ctx, `DELETE FROM accounts WHERE id = 1`)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err != nil {
			t.Errorf("DELETE through QueryContext: %v", err)
		}
		if n := remaining(); n != 0 {
			t.Errorf("row 1 still there (%d): the DELETE did not take effect", n)
		}
	})
}
