package postgres_test

// Red-team rt23a: claims (SELECT … FOR UPDATE in a token-bound transaction) of shapes
// the claim's UPDATE cannot take, or that the server refuses, and a DELETE without
// RETURNING sent with QueryContext.

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const rt23aTable = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// TestRTrt23aClaimWindowClauseRawSyntaxError: `SELECT id FROM accounts WHERE id = 1
// WINDOW w AS () FOR UPDATE` is valid PostgreSQL (the plain driver locks the row), but
// the claim's UPDATE cannot take a WINDOW clause. In a token-bound transaction it is
// refused with ErrUnsupported before anything is sent (plan.selectOnlyClause), so the
// caller's transaction is not aborted by a raw syntax error: a later UPDATE runs and
// the transaction commits.
func TestRTrt23aClaimWindowClauseRawSyntaxError(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, rt23aTable, `INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 5, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	const q = `SELECT id FROM accounts WHERE id = 1 WINDOW w AS () FOR UPDATE`

	// The plain driver runs the statement.
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := rtx.QueryRow(q).Scan(&id); err != nil || id != 1 {
		t.Fatalf("set-up: the plain driver: id %d, err %v", id, err)
	}
	_ = rtx.Rollback()

	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, q).Scan(&id)
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("claim with a WINDOW clause: err = %v; want ErrUnsupported with nothing sent", err)
	}
	// Whatever the claim's verdict, the transaction must still be usable.
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + 1 WHERE id = 2`); err != nil {
		t.Errorf("the transaction after the claim: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("Commit: %v", err)
	}
}

// TestRTrt23aClaimForUpdateOfUnknownRelation: `SELECT … FOR UPDATE OF other`, where
// other is not in the FROM clause, is an error in PostgreSQL (42P01). In a token-bound
// transaction the claim, which locks the FROM table's rows, is refused with
// ErrUnsupported before anything is sent (an OF list may name only the read's table,
// by its alias if it has one), and nothing is stamped.
func TestRTrt23aClaimForUpdateOfUnknownRelation(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, rt23aTable, `CREATE TABLE other (id BIGINT PRIMARY KEY)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	const q = `SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF other`

	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	rawErr := rtx.QueryRow(q).Scan(&id)
	_ = rtx.Rollback()
	if rawErr == nil {
		t.Fatalf("set-up: the plain driver accepted %s", q)
	}

	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.QueryRowContext(ctx, q).Scan(&id)
	cerr := tx.Commit()
	var tok int64
	if err := raw.QueryRow(`SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Errorf("claim %s: succeeded (row %d, Commit %v, fence_token now %d); the server refuses it: %v", q, id, cerr, tok, rawErr)
	} else if !errors.Is(err, fencedsql.ErrUnsupported) || tok != 3 || cerr != nil {
		t.Errorf("claim %s: err %v, fence_token %d, Commit %v; want ErrUnsupported, nothing stamped, the transaction intact", q, err, tok, cerr)
	}
}

// TestRTrt23aDeleteThroughQueryRefused: a plain `DELETE FROM accounts WHERE id = 1` (no
// RETURNING) sent with QueryContext — as database/sql allows for any statement, and as
// ORMs' raw-SQL helpers and QueryRowContext(…).Scan(…) callers do — runs as Exec runs
// it: the two-statement DELETE (no guard installed), counted on the rows affected, in
// the wrapper's own transaction outside the caller's. It answers with no rows; the row
// is deleted and the caller's transaction commits, in a transaction, prepared, and in
// autocommit.
func TestRTrt23aDeleteThroughQueryRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, rt23aTable)
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

// TestRTrt23aClaimOrderByOutputNameWithoutLimit: a locking read ordered by a select-list
// output name without a LIMIT (`SELECT balance AS x … ORDER BY x FOR UPDATE`) picks its
// rows by its WHERE alone. The claim's selection leaves that ORDER BY out (its locking
// query, which has no select list, failed with `column "x" does not exist` and aborted
// the caller's transaction); the rows come back in the statement's order, each stamped.
func TestRTrt23aClaimOrderByOutputNameWithoutLimit(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, rt23aTable, `INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	ctx := fencedsql.WithToken(context.Background(), 8)
	for _, q := range []string{
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY x FOR UPDATE`,
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY x FOR UPDATE NOWAIT`,
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			rows, err := tx.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("claim: %v", err)
			}
			var got []int64
			for rows.Next() {
				var v int64
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("claim: %v", err)
			}
			rows.Close()
			if len(got) != 2 || got[0] != 10 || got[1] != 20 {
				t.Errorf("claim returned %v, want [10 20]", got)
			}
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM accounts WHERE fence_token = 8`).Scan(&n); err != nil || n != 2 {
				t.Errorf("rows stamped: %d (err %v), want 2", n, err)
			}
		})
	}
}
