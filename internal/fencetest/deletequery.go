package fencetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// RunDeleteThroughQuery checks that a plain `DELETE FROM accounts WHERE id = 1` (no
// RETURNING) sent with QueryContext — as database/sql allows for any statement, and as
// ORMs' raw-SQL helpers and QueryRowContext(…).Scan(…) callers do — runs as Exec runs
// it: the fenced DELETE, counted on the rows affected, answering with no rows. The row
// is deleted and the caller's transaction commits, in a transaction, prepared (the
// statement `DELETE FROM accounts WHERE id = <param>` prepared on the pool, run in a
// transaction) and in autocommit.
//
// raw is a plain pool and fenced a fenced pool guarding accounts, both on a database
// whose table accounts (id, balance, fence_token, version) exists; param is the
// dialect's first bind parameter ("$1" or "?").
func RunDeleteThroughQuery(t *testing.T, raw, fenced *sql.DB, param string) {
	reset := func(t *testing.T) {
		t.Helper()
		for _, q := range []string{`DELETE FROM accounts`, `INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 5, 3, 1)`} {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
	}
	drain := func(rows *sql.Rows, err error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	deleted := func(t *testing.T) {
		t.Helper()
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM accounts WHERE id = 1`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("row 1 still there (%d): the DELETE did not take effect", n)
		}
	}
	ctx := fencedsql.WithToken(context.Background(), 8)
	inTx := func(t *testing.T, query func(tx *sql.Tx) (*sql.Rows, error)) {
		t.Helper()
		reset(t)
		tx, err := fenced.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck
		if err := drain(query(tx)); err != nil {
			t.Errorf("DELETE through QueryContext: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("Commit: %v", err)
		}
		deleted(t)
	}
	t.Run("transaction", func(t *testing.T) {
		inTx(t, func(tx *sql.Tx) (*sql.Rows, error) {
			return tx.QueryContext(ctx, `DELETE FROM accounts WHERE id = 1`)
		})
	})
	t.Run("prepared", func(t *testing.T) {
		st, err := fenced.PrepareContext(ctx, `DELETE FROM accounts WHERE id = `+param)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		inTx(t, func(tx *sql.Tx) (*sql.Rows, error) {
			return tx.StmtContext(ctx, st).QueryContext(ctx, 1)
		})
	})
	t.Run("autocommit", func(t *testing.T) {
		reset(t)
		if err := drain(fenced.QueryContext(ctx, `DELETE FROM accounts WHERE id = 1`)); err != nil {
			t.Errorf("DELETE through QueryContext: %v", err)
		}
		deleted(t)
	})
}
