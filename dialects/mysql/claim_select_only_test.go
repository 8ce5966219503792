package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt23a: claims (SELECT … FOR UPDATE in a token-bound transaction) of shapes
// MariaDB accepts whose claim would read, order or compute differently from the
// statement, and a DELETE without RETURNING sent with QueryContext.

// TestClaimSelectOnlyClausesRefused: MariaDB's `LIMIT [n] ROWS EXAMINED m`, a
// WINDOW clause and HAVING without GROUP BY are valid in a locking SELECT (the plain
// driver runs each) but not in an UPDATE, and the claim's fencing UPDATE copies the
// read's WHERE, ORDER BY and LIMIT. In a token-bound transaction each is refused with
// ErrUnsupported before anything is sent (plan.selectOnlyClause), as NOWAIT, WAIT n,
// OFFSET and SKIP LOCKED are, instead of failing with the server's raw 1064 naming
// the wrapper's UPDATE.
func TestClaimSelectOnlyClausesRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 5, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id FROM accounts WHERE id = 1 LIMIT 1 ROWS EXAMINED 10 FOR UPDATE`,
		`SELECT id FROM accounts WHERE id = 1 LIMIT ROWS EXAMINED 10 FOR UPDATE`,
		`SELECT id FROM accounts WHERE id = 1 LIMIT ROWS EXAMINED 10 LOCK IN SHARE MODE`,
		// The same class: a tail clause that a SELECT takes and an UPDATE does not.
		`SELECT id FROM accounts WHERE id = 1 WINDOW w AS () FOR UPDATE`,
		`SELECT id FROM accounts WHERE id = 1 HAVING id = 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
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
				t.Errorf("claim: err = %v; want ErrUnsupported with nothing sent", err)
			}
			// Nothing stamped, and the transaction still usable.
			var tok int64
			if err := tx.QueryRowContext(ctx, `SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok); err != nil || tok != 3 {
				t.Errorf("after the refusal: row 1's fence_token %d, err %v; want 3 in a usable transaction", tok, err)
			}
		})
	}
}

// TestClaimWindowFunctionWithLimitRefused: MariaDB computes a window function
// in a locking read's select list over every row the WHERE selects, before the LIMIT
// (`SELECT id, COUNT(*) OVER () … ORDER BY id LIMIT 1 FOR UPDATE` over three rows
// answers (1, 3)); the claim's read is restricted to the rows its fencing UPDATE
// stamped, the LIMIT's one row, over which the window would answer (1, 1). A claim
// with a LIMIT whose select list calls a window function is refused with
// ErrUnsupported before anything is sent; the test fails if a claim returns values
// other than the plain driver's.
func TestClaimWindowFunctionWithLimitRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id, COUNT(*) OVER () FROM accounts WHERE balance > 0 ORDER BY id LIMIT 1 FOR UPDATE`,
		`SELECT id, ROW_NUMBER() OVER (ORDER BY balance) FROM accounts WHERE balance > 0 ORDER BY id LIMIT 1 FOR UPDATE`,
		`SELECT id, SUM(balance) OVER () FROM accounts WHERE balance > 0 ORDER BY id LIMIT 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			for _, s := range []string{`DELETE FROM accounts`, `INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1), (3, 30, 3, 1)`} {
				if _, err := raw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var wantID, want int64
			if err := rtx.QueryRow(q).Scan(&wantID, &want); err != nil {
				t.Fatalf("set-up: the plain driver: %v", err)
			}
			_ = rtx.Rollback()

			ctx := fencedsql.WithToken(context.Background(), 8)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var id, got int64
			err = tx.QueryRowContext(ctx, q).Scan(&id, &got)
			if err == nil && (id != wantID || got != want) {
				t.Errorf("claim returned (%d, %d); the statement computes (%d, %d)", id, got, wantID, want)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("claim: err %v; want ErrUnsupported (a window function with a LIMIT)", err)
			}
			var tok int64
			if err := tx.QueryRowContext(ctx, `SELECT MAX(fence_token) FROM accounts`).Scan(&tok); err != nil || tok != 3 {
				t.Errorf("after the refusal: fence_token %d, err %v; want 3 in a usable transaction", tok, err)
			}
		})
	}
}

// TestClaimFoundRowsWithLimitRefused: the same cause as
// TestClaimWindowFunctionWithLimitRefused. After `SELECT SQL_CALC_FOUND_ROWS
// id … ORDER BY balance LIMIT 1 FOR UPDATE`, FOUND_ROWS() answers 3 on the plain driver
// (the LIMIT ignored); the claim's read, restricted to the one stamped row, would make
// it answer 1. A claim with SQL_CALC_FOUND_ROWS and a LIMIT is refused with
// ErrUnsupported before anything is sent.
func TestClaimFoundRowsWithLimitRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1), (3, 30, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	const q = `SELECT SQL_CALC_FOUND_ROWS id FROM accounts WHERE balance > 0 ORDER BY balance LIMIT 1 FOR UPDATE`
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id, want int64
	if err := rtx.QueryRow(q).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := rtx.QueryRow(`SELECT FOUND_ROWS()`).Scan(&want); err != nil || want != 3 {
		t.Fatalf("set-up: the plain driver's FOUND_ROWS() = %d (err %v), want 3", want, err)
	}
	_ = rtx.Rollback()

	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, q).Scan(&id); err != nil {
		if errors.Is(err, fencedsql.ErrUnsupported) {
			var tok int64
			if err := tx.QueryRowContext(ctx, `SELECT MAX(fence_token) FROM accounts`).Scan(&tok); err != nil || tok != 3 {
				t.Errorf("after the refusal: fence_token %d, err %v; want 3 in a usable transaction", tok, err)
			}
			return
		}
		t.Fatalf("claim: %v", err)
	}
	t.Errorf("claim with SQL_CALC_FOUND_ROWS and a LIMIT: not refused")
	var got int64
	if err := tx.QueryRowContext(ctx, `SELECT FOUND_ROWS()`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("FOUND_ROWS() after the claim = %d, the statement computes %d", got, want)
	}
}

// Red-team rt15c (failed on e10017f): FETCH FIRST and a parenthesized ORDER BY alias in
// a MariaDB locking read are refused with a token, never claimed by another order.

// TestClaimFetchFirstNoRawSyntaxError: MariaDB (10.6+) takes FETCH FIRST n ROWS ONLY in a
// SELECT; the planner reads it as part of the ORDER BY clause and copies it into the
// claiming UPDATE … ORDER BY …, which does not take it. The claim must succeed with
// the plain read's row, or be refused with ErrUnsupported — not fail with the server's
// raw syntax error.
func TestClaimFetchFirstNoRawSyntaxError(t *testing.T) {
	raw, fenced := orderByAccounts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const q = `SELECT id FROM accounts WHERE balance < 50 ORDER BY balance FETCH FIRST 1 ROW ONLY FOR UPDATE`
	var plainID int64
	if err := raw.QueryRowContext(ctx, q).Scan(&plainID); err != nil {
		t.Fatalf("plain read: %v", err)
	}
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var got int64
	err = tx.QueryRowContext(ctx, q).Scan(&got)
	t.Logf("claim: %d err %v; plain read %d", got, err, plainID)
	switch {
	case err == nil && got != plainID:
		t.Errorf("claim returned %d; the plain read returns %d", got, plainID)
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Errorf("claim failed with %v: want the plain read's row %d or ErrUnsupported", err, plainID)
	}
}
