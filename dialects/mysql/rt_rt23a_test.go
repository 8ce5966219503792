package mysql_test

// Red-team rt23a: claims (SELECT … FOR UPDATE in a token-bound transaction) of shapes
// MariaDB accepts whose claim would read, order or compute differently from the
// statement, and a DELETE without RETURNING sent with QueryContext.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt23aClaimRowsExaminedRawSyntaxError: MariaDB's `LIMIT [n] ROWS EXAMINED m`, a
// WINDOW clause and HAVING without GROUP BY are valid in a locking SELECT (the plain
// driver runs each) but not in an UPDATE, and the claim's fencing UPDATE copies the
// read's WHERE, ORDER BY and LIMIT. In a token-bound transaction each is refused with
// ErrUnsupported before anything is sent (plan.selectOnlyClause), as NOWAIT, WAIT n,
// OFFSET and SKIP LOCKED are, instead of failing with the server's raw 1064 naming
// the wrapper's UPDATE.
func TestRTrt23aClaimRowsExaminedRawSyntaxError(t *testing.T) {
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

// TestRTrt23aDeleteThroughQueryRefused: a plain `DELETE FROM accounts WHERE id = 1` (no
// RETURNING) sent with QueryContext runs as Exec runs it — the two-statement DELETE
// (no guard installed), counted on the rows affected, in the wrapper's own
// transaction outside the caller's — and answers with no rows: the row is deleted, and
// the caller's transaction commits.
func TestRTrt23aDeleteThroughQueryRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	reset := func() {
		t.Helper()
		for _, q := range []string{`DELETE FROM accounts`, `INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 5, 3, 1)`} {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
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

// TestRTrt23aClaimOrderByQuotedStringAliasTakesOtherRow: MySQL/MariaDB take a string
// literal as an alias — `AS "id"` (double quotes without ANSI_QUOTES), `AS 'id'`, with
// or without AS, in any case — and ORDER BY id then orders by that alias (the plain
// driver returns balance 10, row 2). The claim's fencing UPDATE has no select list and
// would order by the id column, stamping and returning row 1 while row 2, the row the
// statement selects, stayed unclaimed. The planner reads these aliases as the server
// does and refuses the claim with ErrUnsupported before anything is sent, as it
// refuses the unquoted and backtick-quoted aliases; the test fails if a claim returns
// any row but the statement's, or leaves that row without the token.
func TestRTrt23aClaimOrderByQuotedStringAliasTakesOtherRow(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT balance AS "id" FROM accounts WHERE id IN (1, 2) ORDER BY id LIMIT 1 FOR UPDATE`,
		`SELECT balance AS 'id' FROM accounts WHERE id IN (1, 2) ORDER BY id LIMIT 1 FOR UPDATE`,
		`SELECT balance 'id' FROM accounts WHERE id IN (1, 2) ORDER BY id LIMIT 1 FOR UPDATE`,
		`SELECT balance "ID" FROM accounts WHERE id IN (1, 2) ORDER BY id LIMIT 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			for _, s := range []string{`DELETE FROM accounts`, `INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1)`} {
				if _, err := raw.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			// The plain driver: ORDER BY id orders by the alias (balance): row 2, balance 10.
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			if err := rtx.QueryRow(q).Scan(&want); err != nil || want != 10 {
				t.Fatalf("set-up: the plain driver returned %d (err %v), want 10", want, err)
			}
			_ = rtx.Rollback()

			ctx := fencedsql.WithToken(context.Background(), 8)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var got int64
			err = tx.QueryRowContext(ctx, q).Scan(&got)
			if err != nil && (!errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "output name")) {
				t.Fatalf("claim: %v; want ErrUnsupported for an output name", err)
			}
			var tok1, tok2 int64
			if err := tx.QueryRowContext(ctx, `SELECT (SELECT fence_token FROM accounts WHERE id = 1), (SELECT fence_token FROM accounts WHERE id = 2)`).Scan(&tok1, &tok2); err != nil {
				t.Fatal(err)
			}
			if err != nil {
				if tok1 != 3 || tok2 != 3 {
					t.Errorf("refused claim stamped rows: fence tokens: row 1 %d, row 2 %d", tok1, tok2)
				}
				return
			}
			if got != want || tok2 != 8 {
				t.Errorf("claim returned balance %d (the statement selects %d); fence tokens: row 1 %d, row 2 %d — the row the statement names is not claimed", got, want, tok1, tok2)
			}
		})
	}
}

// TestRTrt23aClaimOrderByAliasInExpressionRawError: MySQL/MariaDB resolve a select-list
// alias inside an ORDER BY expression (`SELECT balance AS x … ORDER BY x + 0 LIMIT 1
// FOR UPDATE`, `ORDER BY (SELECT x)`) and a string-literal alias by its bare name
// (`AS 'x' … ORDER BY x`); the claim's fencing UPDATE, which has no select list, could
// not. Each is refused with ErrUnsupported before anything is sent, with the reason
// the bare alias gets ("orders by a select-list output name"), instead of failing with
// the server's raw 1054 Unknown column 'x'.
func TestRTrt23aClaimOrderByAliasInExpressionRawError(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY x + 0 LIMIT 1 FOR UPDATE`,
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY (SELECT x) LIMIT 1 FOR UPDATE`,
		`SELECT balance AS 'x' FROM accounts WHERE id IN (1, 2) ORDER BY x LIMIT 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var v int64
			if err := rtx.QueryRow(q).Scan(&v); err != nil || v != 10 {
				t.Fatalf("set-up: the plain driver: %d, err %v; want 10", v, err)
			}
			_ = rtx.Rollback()
			ctx := fencedsql.WithToken(context.Background(), 8)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if err := tx.QueryRowContext(ctx, q).Scan(&v); !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "output name") {
				t.Errorf("claim: err = %v; want ErrUnsupported for an output name, with nothing sent", err)
			}
			var tok int64
			if err := tx.QueryRowContext(ctx, `SELECT MAX(fence_token) FROM accounts`).Scan(&tok); err != nil || tok != 3 {
				t.Errorf("after the refusal: fence_token %d, err %v; want 3 in a usable transaction", tok, err)
			}
		})
	}
}

// TestRTrt23aClaimWindowFunctionOverLimitWrongValues: MariaDB computes a window function
// in a locking read's select list over every row the WHERE selects, before the LIMIT
// (`SELECT id, COUNT(*) OVER () … ORDER BY id LIMIT 1 FOR UPDATE` over three rows
// answers (1, 3)); the claim's read is restricted to the rows its fencing UPDATE
// stamped, the LIMIT's one row, over which the window would answer (1, 1). A claim
// with a LIMIT whose select list calls a window function is refused with
// ErrUnsupported before anything is sent; the test fails if a claim returns values
// other than the plain driver's.
func TestRTrt23aClaimWindowFunctionOverLimitWrongValues(t *testing.T) {
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

// TestRTrt23aClaimFoundRowsAfterLimit: the same cause as
// TestRTrt23aClaimWindowFunctionOverLimitWrongValues. After `SELECT SQL_CALC_FOUND_ROWS
// id … ORDER BY balance LIMIT 1 FOR UPDATE`, FOUND_ROWS() answers 3 on the plain driver
// (the LIMIT ignored); the claim's read, restricted to the one stamped row, would make
// it answer 1. A claim with SQL_CALC_FOUND_ROWS and a LIMIT is refused with
// ErrUnsupported before anything is sent.
func TestRTrt23aClaimFoundRowsAfterLimit(t *testing.T) {
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

// TestRTrt23aClaimSelectModifierReadAsAlias: a select modifier before the select list —
// `SELECT ALL id`, SQL_NO_CACHE, HIGH_PRIORITY, STRAIGHT_JOIN, SQL_BIG_RESULT,
// SQL_SMALL_RESULT, SQL_BUFFER_RESULT — is not an expression with the alias id (the
// server reads it as a modifier even where a column of that name exists): `SELECT ALL
// id FROM accounts WHERE balance > 0 ORDER BY id LIMIT 1 FOR UPDATE` is claimed exactly
// as without the modifier. SQL_CALC_FOUND_ROWS with a LIMIT is refused, for FOUND_ROWS()
// (TestRTrt23aClaimFoundRowsAfterLimit), not as an output name.
func TestRTrt23aClaimSelectModifierReadAsAlias(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1), (3, 30, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx := fencedsql.WithToken(context.Background(), 8)
	for _, mod := range []string{"", "ALL ", "SQL_NO_CACHE ", "HIGH_PRIORITY ", "STRAIGHT_JOIN ", "SQL_BIG_RESULT ",
		"SQL_SMALL_RESULT ", "SQL_BUFFER_RESULT ", "ALL SQL_NO_CACHE STRAIGHT_JOIN ", "SQL_CALC_FOUND_ROWS "} {
		q := `SELECT ` + mod + `id FROM accounts WHERE balance > 0 ORDER BY id LIMIT 1 FOR UPDATE`
		t.Run(q, func(t *testing.T) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var id int64
			err = tx.QueryRowContext(ctx, q).Scan(&id)
			if mod == "SQL_CALC_FOUND_ROWS " {
				if !errors.Is(err, fencedsql.ErrUnsupported) || strings.Contains(err.Error(), "output name") || !strings.Contains(err.Error(), "FOUND_ROWS") {
					t.Errorf("claim: err %v; want ErrUnsupported for FOUND_ROWS(), not for an output name", err)
				}
				return
			}
			if err != nil || id != 1 {
				t.Errorf("claim: id %d, err %v; want row 1 claimed", id, err)
			}
			var tok int64
			if err := tx.QueryRowContext(ctx, `SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok); err != nil || tok != 8 {
				t.Errorf("row 1's fence_token %d (err %v), want 8: the row is not claimed", tok, err)
			}
		})
	}
}

// TestRTrt23aClaimOrderByOutputNameWithoutLimit: a locking read ordered by a select-list
// output name without a LIMIT (`SELECT balance AS x … ORDER BY x FOR UPDATE`, `ORDER BY
// x + 0`, a string-literal alias) picks its rows by its WHERE alone. The claim's
// fencing UPDATE leaves that ORDER BY out (it failed with a raw `Error 1054 Unknown
// column 'x'`); the rows come back in the statement's order, each stamped.
func TestRTrt23aClaimOrderByOutputNameWithoutLimit(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 20, 3, 1), (2, 10, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx := fencedsql.WithToken(context.Background(), 8)
	for _, q := range []string{
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY x FOR UPDATE`,
		`SELECT balance AS x FROM accounts WHERE id IN (1, 2) ORDER BY x + 0 FOR UPDATE`,
		`SELECT balance AS 'x' FROM accounts WHERE id IN (1, 2) ORDER BY x FOR UPDATE`,
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
