package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimLiteralOutputNameRefused (red-team rt26b F4): MariaDB names a
// select-list item that is only string literals — parenthesized ('balance'),
// (('balance')), or adjacent literals it concatenates ('bal' 'ance', N'bal' 'ance',
// 'bal' "ance") — by their value, and an ORDER BY name then means that output before
// the table's column. In
//
//	SELECT id, ('balance') FROM accounts WHERE id > 0 ORDER BY balance DESC LIMIT 1 FOR UPDATE
//
// the server orders by the constant, while a claim copying ORDER BY balance DESC
// LIMIT 1 into its UPDATE would stamp and return another row. Such an item may name
// any output (plan.literalsOnly), so a bare ORDER BY name before a LIMIT is refused
// with ErrUnsupported before anything is sent and nothing is stamped.
func TestClaimLiteralOutputNameRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 3, 1), (2, 7, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, item := range []string{`('balance')`, `(('balance'))`, `'bal' 'ance'`, `N'bal' 'ance'`, `_utf8mb4'bal' 'ance'`, `'bal' "ance"`} {
		q := `SELECT id, ` + item + ` FROM accounts WHERE id > 0 ORDER BY balance DESC LIMIT 1 FOR UPDATE`
		t.Run(item, func(t *testing.T) {
			var pid int64
			var ps string
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if err := rtx.QueryRow(q).Scan(&pid, &ps); err != nil {
				t.Fatalf("set-up: the plain driver: %v", err)
			}
			_ = rtx.Rollback()
			if pid != 1 {
				t.Fatalf("set-up: the plain driver returns row %d; the test expects MariaDB to order by the constant and return row 1", pid)
			}

			ctx := fencedsql.WithToken(context.Background(), 8)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var id int64
			var s string
			err = tx.QueryRowContext(ctx, q).Scan(&id, &s)
			var tok2 int64
			_ = tx.QueryRowContext(ctx, `SELECT fence_token FROM accounts WHERE id = 2`).Scan(&tok2)
			if err == nil {
				t.Fatalf("claim %s returned row %d (row 2's token now %d) with no error; the statement selects row %d: the claim ordered by the column balance, the server by the output named balance; want ErrUnsupported before anything is sent", q, id, tok2, pid)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) || tok2 == 8 {
				t.Fatalf("claim: err = %v, row 2's token %d; want ErrUnsupported and nothing stamped", err, tok2)
			}
		})
	}
}

// TestClaimLeadingSpaceAliasRefused (red-team rt25b F1): MariaDB drops the
// leading blanks of a select-list alias (AS ' balance', AS "\tbalance" and
// AS ` balance` name the output column balance), and an ORDER BY name means an output
// name before a column. So in
//
//	SELECT id, balance, -balance AS ' balance' FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE
//
// the server orders by -balance and selects row 2. The claim reads output names as
// MariaDB does (plan.outputName drops the blanks), so the ORDER BY names an output
// column before a LIMIT and the claim is refused with ErrUnsupported before anything
// is sent: it never stamps and returns row 1, which the statement does not select
// (as it did), nor fails with the server's raw error 1054 (AS ' bal' … ORDER BY bal).
func TestClaimLeadingSpaceAliasRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1), (3, 6, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		"SELECT id, balance, -balance AS ' balance' FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE",
		"SELECT id, -balance ' balance', balance FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE",
		"SELECT id, accounts.balance, -balance AS \"\tbalance\" FROM accounts ORDER BY balance LIMIT 1 LOCK IN SHARE MODE",
		"SELECT id, balance, -balance AS ` balance` FROM accounts ORDER BY balance LIMIT 1 FOR UPDATE",
		"SELECT id, -balance AS ' bal' FROM accounts ORDER BY bal LIMIT 1 FOR UPDATE",
	} {
		t.Run(q, func(t *testing.T) {
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			if err := rtx.QueryRow(q).Scan(&want, new(any), new(any)); err != nil && !strings.Contains(err.Error(), "expected 2 destination") {
				t.Fatalf("set-up: the plain driver: %v", err)
			}
			if want == 0 {
				_ = rtx.QueryRow(q).Scan(&want, new(any))
			}
			_ = rtx.Rollback()
			if want != 2 {
				t.Fatalf("set-up: the plain driver selects row %d; this test expects MariaDB to order by the alias (row 2)", want)
			}

			ctx := fencedsql.WithToken(context.Background(), 8)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			rows, err := tx.QueryContext(ctx, q)
			var got []int64
			if err == nil {
				for rows.Next() {
					cols, _ := rows.Columns()
					dest := make([]any, len(cols))
					var id int64
					dest[0] = &id
					for i := 1; i < len(dest); i++ {
						dest[i] = new(any)
					}
					if err = rows.Scan(dest...); err != nil {
						break
					}
					got = append(got, id)
				}
				if err == nil {
					err = rows.Err()
				}
				rows.Close()
			}
			var stamped []int64
			if srows, serr := tx.QueryContext(ctx, `SELECT id FROM accounts WHERE fence_token = 8 ORDER BY id`); serr == nil {
				for srows.Next() {
					var id int64
					_ = srows.Scan(&id)
					stamped = append(stamped, id)
				}
				srows.Close()
			}
			if errors.Is(err, fencedsql.ErrUnsupported) && len(stamped) == 0 {
				return
			}
			if err == nil && len(got) == 1 && got[0] == 2 && len(stamped) == 1 && stamped[0] == 2 {
				return
			}
			t.Errorf("claim: rows %v, err = %v, rows stamped %v; the statement selects row 2: want ErrUnsupported with nothing stamped (or row 2 claimed), not another row stamped and returned or the server's raw error", got, err, stamped)
		})
	}
}

// TestClaimImplicitOutputNameRefused (red-team rt25b F5): MariaDB names a
// select-list expression without an alias by its text, and an ORDER BY may name that
// output column back-quoted (ORDER BY `-balance`, `balance * -1`, `ABS(balance-7)`).
// The claim takes such a name for an output name (plan.implicitOutputs) and refuses
// it before a LIMIT with ErrUnsupported before anything is sent, where it had copied
// it into its fencing UPDATE and failed with the server's raw error 1054.
func TestClaimImplicitOutputNameRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1), (3, 6, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		"SELECT id, -balance FROM accounts ORDER BY `-balance` LIMIT 1 FOR UPDATE",
		"SELECT id, balance * -1 FROM accounts ORDER BY `balance * -1` LIMIT 1 FOR UPDATE",
		"SELECT id, ABS(balance-7) FROM accounts ORDER BY `ABS(balance-7)` LIMIT 1 FOR UPDATE",
	} {
		t.Run(q, func(t *testing.T) {
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := rtx.QueryRow(q).Scan(&id, new(any)); err != nil || id != 2 {
				t.Fatalf("set-up: the plain driver: row %d, err %v; want row 2", id, err)
			}
			_ = rtx.Rollback()
			ctx := fencedsql.WithToken(context.Background(), 8)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			id = 0
			err = tx.QueryRowContext(ctx, q).Scan(&id, new(any))
			if !errors.Is(err, fencedsql.ErrUnsupported) && !(err == nil && id == 2) {
				t.Errorf("claim: row %d, err = %v; want ErrUnsupported before anything is sent (or row 2 claimed), not the server's raw error on the wrapper's UPDATE", id, err)
			}
		})
	}
}

// TestClaimParenthesizedOrderByAliasReturnsStampedRow: MariaDB resolves a parenthesized ORDER BY
// item `(id)` to the select-list alias id, as the bare `id` (checked: `ORDER BY (a)`
// orders by the alias, `ORDER BY a + 0` by the column). orderByOutput refuses only the
// bare word, so the claiming `UPDATE … ORDER BY (id) LIMIT 1` orders by the column id
// and stamps another row than the plain read returns; the read restricted to the token
// then returns the stamped row.
func TestClaimParenthesizedOrderByAliasReturnsStampedRow(t *testing.T) {
	raw, fenced := orderByAccounts(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const q = `SELECT id AS k, balance AS id FROM accounts WHERE balance < 50 ORDER BY (id) LIMIT 1 FOR UPDATE`
	var plainK, plainB int64
	if err := raw.QueryRowContext(ctx, q).Scan(&plainK, &plainB); err != nil {
		t.Fatalf("plain read: %v", err)
	}
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var k, b int64
	err = tx.QueryRowContext(ctx, q).Scan(&k, &b)
	var stamped []int64
	if err == nil {
		rs, qerr := tx.QueryContext(ctx, `SELECT id FROM accounts WHERE fence_token = 10 ORDER BY id`)
		if qerr != nil {
			t.Fatal(qerr)
		}
		for rs.Next() {
			var id int64
			_ = rs.Scan(&id)
			stamped = append(stamped, id)
		}
		rs.Close()
	}
	t.Logf("claim: row %d err %v, stamped %v; plain read row %d", k, err, stamped, plainK)
	switch {
	case err == nil && (k != plainK || len(stamped) != 1 || stamped[0] != plainK):
		t.Errorf("claim returned row %d and stamped %v; the plain read returns row %d", k, stamped, plainK)
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Errorf("claim failed with %v: want the plain read's row %d or ErrUnsupported", err, plainK)
	}
}

// orderByAccounts creates a guarded accounts table with rows 1..3 (balances 9, 1, 5,
// token 1) in a fresh MariaDB database and returns the plain and the fenced pool.
func orderByAccounts(t *testing.T) (raw, fenced *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token) VALUES (1, 9, 1), (2, 1, 1), (3, 5, 1)`)
	fenced = testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	return raw, fenced
}

// TestClaimOrderByQuotedStringAliasRefused: MySQL/MariaDB take a string
// literal as an alias — `AS "id"` (double quotes without ANSI_QUOTES), `AS 'id'`, with
// or without AS, in any case — and ORDER BY id then orders by that alias (the plain
// driver returns balance 10, row 2). The claim's fencing UPDATE has no select list and
// would order by the id column, stamping and returning row 1 while row 2, the row the
// statement selects, stayed unclaimed. The planner reads these aliases as the server
// does and refuses the claim with ErrUnsupported before anything is sent, as it
// refuses the unquoted and backtick-quoted aliases; the test fails if a claim returns
// any row but the statement's, or leaves that row without the token.
func TestClaimOrderByQuotedStringAliasRefused(t *testing.T) {
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

// TestClaimOrderByAliasInExpressionRefused: MySQL/MariaDB resolve a select-list
// alias inside an ORDER BY expression (`SELECT balance AS x … ORDER BY x + 0 LIMIT 1
// FOR UPDATE`, `ORDER BY (SELECT x)`) and a string-literal alias by its bare name
// (`AS 'x' … ORDER BY x`); the claim's fencing UPDATE, which has no select list, could
// not. Each is refused with ErrUnsupported before anything is sent, with the reason
// the bare alias gets ("orders by a select-list output name"), instead of failing with
// the server's raw 1054 Unknown column 'x'.
func TestClaimOrderByAliasInExpressionRefused(t *testing.T) {
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

// TestClaimSelectModifierNotReadAsAlias: a select modifier before the select list —
// `SELECT ALL id`, SQL_NO_CACHE, HIGH_PRIORITY, STRAIGHT_JOIN, SQL_BIG_RESULT,
// SQL_SMALL_RESULT, SQL_BUFFER_RESULT — is not an expression with the alias id (the
// server reads it as a modifier even where a column of that name exists): `SELECT ALL
// id FROM accounts WHERE balance > 0 ORDER BY id LIMIT 1 FOR UPDATE` is claimed exactly
// as without the modifier. SQL_CALC_FOUND_ROWS with a LIMIT is refused, for FOUND_ROWS()
// (TestClaimFoundRowsWithLimitRefused), not as an output name.
func TestClaimSelectModifierNotReadAsAlias(t *testing.T) {
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

// TestClaimOrderByOutputNameWithoutLimitStampsEachRow: a locking read ordered by a select-list
// output name without a LIMIT (`SELECT balance AS x … ORDER BY x FOR UPDATE`, `ORDER BY
// x + 0`, a string-literal alias) picks its rows by its WHERE alone. The claim's
// fencing UPDATE leaves that ORDER BY out (it failed with a raw `Error 1054 Unknown
// column 'x'`); the rows come back in the statement's order, each stamped.
func TestClaimOrderByOutputNameWithoutLimitStampsEachRow(t *testing.T) {
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
