package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimOrderByOutputNameWithoutLimitStampsEachRow: a locking read ordered by a select-list
// output name without a LIMIT (`SELECT balance AS x … ORDER BY x FOR UPDATE`) picks its
// rows by its WHERE alone. The claim's selection leaves that ORDER BY out (its locking
// query, which has no select list, failed with `column "x" does not exist` and aborted
// the caller's transaction); the rows come back in the statement's order, each stamped.
func TestClaimOrderByOutputNameWithoutLimitStampsEachRow(t *testing.T) {
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn, selectOnlyTable, `INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1)`)
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

// TestClaimOrderByQuestionColumnKeepsTx (red-team rt25b F4b): PostgreSQL names
// a select-list expression that has no name of its own "?column?", and an ORDER BY may
// name it (SELECT id, -balance FROM accounts ORDER BY "?column?" … FOR UPDATE orders
// by -balance). The claim takes "?column?" for an output name: before a LIMIT it is
// refused with ErrUnsupported before anything is sent, and without one it is left out
// of the claim's selection and kept by the read (row 2 claimed first). The claim never
// sends it as a column (the server's raw 42703 had aborted the caller's transaction).
func TestClaimOrderByQuestionColumnKeepsTx(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1), (3, 6, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id, -balance FROM accounts WHERE id > 0 ORDER BY "?column?" FOR UPDATE`,
		`SELECT id, -balance FROM accounts WHERE id > 0 ORDER BY "?column?" LIMIT 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := rtx.QueryRow(q).Scan(&id, new(any)); err != nil || id != 2 {
				t.Fatalf("set-up: the plain driver: first row %d, err %v; want row 2", id, err)
			}
			_ = rtx.Rollback()
			tctx := fencedsql.WithToken(ctx, 8)
			tx, err := db.BeginTx(tctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			id = 0
			err = tx.QueryRowContext(tctx, q).Scan(&id, new(any))
			_, after := tx.ExecContext(tctx, `SELECT 1`)
			if !(errors.Is(err, fencedsql.ErrUnsupported) || err == nil && id == 2) || after != nil {
				t.Errorf("claim: first row %d, err = %v; the transaction afterwards: %v; want row 2 claimed (no LIMIT) or ErrUnsupported before anything is sent, and the transaction usable", id, err, after)
			}
		})
	}
}

// TestClaimSubqueryOutputNameRefused (red-team rt25b F1b): PostgreSQL names a
// scalar subquery's output column after the subquery's one target, which a `*` over a
// function returning TABLE(balance bigint) names balance without the word appearing
// in the select list. ORDER BY balance then means that output column: in
//
//	SELECT id, (SELECT * FROM rt25b_neg(id)) FROM accounts WHERE id > 0 ORDER BY balance LIMIT 1 FOR UPDATE
//
// the server orders by -id and selects row 3. An item whose output name its text need
// not show (a `*` inside it, a composite's expansion, (TABLE …), (VALUES …)) may name
// any output (plan.unreadableOutput), so a bare ORDER BY name before a LIMIT is
// refused with ErrUnsupported before anything is sent: the claim never stamps and
// returns row 1 (as it did), which the statement does not select.
func TestClaimSubqueryOutputNameRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1), (3, 6, 3, 1)`,
		`CREATE FUNCTION rt25b_neg(bigint) RETURNS TABLE(balance bigint) LANGUAGE sql IMMUTABLE AS 'SELECT -$1'`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	q := `SELECT id, (SELECT * FROM rt25b_neg(id)) FROM accounts WHERE id > 0 ORDER BY balance LIMIT 1 FOR UPDATE`
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := rtx.QueryRow(q).Scan(&id, new(any)); err != nil || id != 3 {
		t.Fatalf("set-up: the plain driver: row %d, err %v; want row 3 (ordered by the subquery's output column balance)", id, err)
	}
	_ = rtx.Rollback()
	tctx := fencedsql.WithToken(ctx, 8)
	tx, err := db.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	id = 0
	err = tx.QueryRowContext(tctx, q).Scan(&id, new(any))
	var stamped []int64
	if rows, serr := tx.QueryContext(tctx, `SELECT id FROM accounts WHERE fence_token = 8 ORDER BY id`); serr == nil {
		for rows.Next() {
			var s int64
			_ = rows.Scan(&s)
			stamped = append(stamped, s)
		}
		rows.Close()
	}
	if errors.Is(err, fencedsql.ErrUnsupported) && len(stamped) == 0 {
		return
	}
	if err == nil && id == 3 && len(stamped) == 1 && stamped[0] == 3 {
		return
	}
	t.Errorf("claim: row %d, err = %v, rows stamped %v; the statement selects row 3: want ErrUnsupported with nothing stamped (or row 3 claimed), never another row stamped and returned", id, err, stamped)
}
