package mysql_test

// Red-team rt26b: the claim planner's allow-list of MySQL/MariaDB built-in scalar
// functions (plan.scalarBuiltins, collapsingSelect) after the rt25b fixes.

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt26bAggregate is a MariaDB user-defined aggregate counting its rows, named name.
func rt26bAggregate(name string) string {
	return `CREATE AGGREGATE FUNCTION ` + name + `(x BIGINT) RETURNS BIGINT
BEGIN
  DECLARE n BIGINT DEFAULT 0;
  DECLARE CONTINUE HANDLER FOR NOT FOUND RETURN n;
  LOOP
    FETCH GROUP NEXT ROW;
    SET n = n + 1;
  END LOOP;
END`
}

// TestRTrt26bAllowListedNonNativeAggregateClaimed (red-team rt26b F1): FORMAT_BYTES
// and FORMAT_PICO_TIME are MySQL 8 functions that MariaDB 10.11 lacks, so a bare
// format_bytes(id) there calls the current database's stored function, which CREATE
// AGGREGATE FUNCTION can make an aggregate (computed over no stamped row, it would
// pass the count of a claim that stamped one). plan.scalarBuiltins no longer lists
// them: the claim is refused with ErrUnsupported before anything is sent, the
// transaction stays usable and nothing is stamped.
func TestRTrt26bAllowListedNonNativeAggregateClaimed(t *testing.T) {
	raw, db := rt26bAggregateDB(t, rt26bAggregate("format_bytes"))
	q := `SELECT format_bytes(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`
	rt26bClaimRefused(t, raw, db, q, "format_bytes is no MariaDB built-in, the bare call ran the stored aggregate over no stamped row")
}

// TestRTrt26bClaimLiteralOutputNameWrongRow (red-team rt26b F4): MariaDB names a
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
func TestRTrt26bClaimLiteralOutputNameWrongRow(t *testing.T) {
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

// rt26bClaimSameRow runs q under the plain driver and then as a claim with token 8
// and fails unless the claim runs and returns the plain driver's first id.
func rt26bClaimSameRow(t *testing.T, raw, db interface {
	Begin() (*sql.Tx, error)
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}, q string) {
	t.Helper()
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	var pv any
	if err := rtx.QueryRow(q).Scan(&pid, &pv); err != nil {
		t.Fatalf("set-up: the plain driver runs it: %v", err)
	}
	_ = rtx.Rollback()
	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	var v any
	if err := tx.QueryRowContext(ctx, q).Scan(&id, &v); err != nil {
		t.Fatalf("over-refusal: %s: %v; want it claimed (the plain driver returns row %d)", q, err, pid)
	}
	if id != pid {
		t.Fatalf("claim returned row %d; the plain driver row %d", id, pid)
	}
}

// TestRTrt26bClaimIsNullSelectRefused (red-team rt26b F6): a select list that ends
// in x IS NULL, x IS NOT NULL or x IS TRUE right before FROM is not IS [NOT] DISTINCT
// FROM (plan.selectFrom skips a FROM only after DISTINCT), so
// SELECT id, closed_at IS NULL FROM accounts WHERE id = 1 FOR UPDATE is claimed and
// returns the plain driver's row.
func TestRTrt26bClaimIsNullSelectRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, closed_at DATETIME NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 5), (2, 7)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id, closed_at IS NULL FROM accounts WHERE id = 1 FOR UPDATE`,
		`SELECT id, closed_at IS NOT NULL FROM accounts WHERE id = 1 FOR UPDATE`,
		`SELECT id, balance > 0 IS TRUE FROM accounts WHERE id = 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) { rt26bClaimSameRow(t, raw, db, q) })
	}
}

// TestRTrt26bSpacedBuiltinNameCallsStoredAggregate (red-team rt26b F7): with
// IGNORE_SPACE off (the default) MySQL/MariaDB parse names such as SUBSTR, NOW, TRIM
// as a built-in only when '(' follows at once; `substr (id)` calls the stored
// function substr of the current database, which may be an aggregate. A claim whose
// select list or ORDER BY calls a function with a blank or comment between its name
// and '(' is refused with ErrUnsupported before anything is sent (plan.collapsingSelect),
// the transaction stays usable and nothing is stamped.
func TestRTrt26bSpacedBuiltinNameCallsStoredAggregate(t *testing.T) {
	raw, db := rt26bAggregateDB(t, rt26bAggregate("`substr`"))
	q := `SELECT substr (id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`
	rt26bClaimRefused(t, raw, db, q, "the blank makes substr (…) a call of the stored aggregate, computed over no stamped row")
}

// TestRTrt26bCallWordNameCallsStoredAggregate (red-team rt26b F8): ESCAPE and AGAINST
// are not reserved on MariaDB, so `escape(id)` and `against(id)` call the stored
// function of that name, which may be an aggregate. plan.callWords no longer excuses
// them (AGAINST only right after MATCH (…)): the claims are refused with
// ErrUnsupported before anything is sent, and nothing is stamped.
func TestRTrt26bCallWordNameCallsStoredAggregate(t *testing.T) {
	raw, db := rt26bAggregateDB(t, rt26bAggregate("`escape`"), rt26bAggregate("`against`"))
	for _, q := range []string{
		`SELECT escape(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`,
		`SELECT against(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' LOCK IN SHARE MODE`,
	} {
		t.Run(q, func(t *testing.T) {
			rt26bClaimRefused(t, raw, db, q, "the call ran the stored aggregate over no stamped row")
		})
	}
}

// rt26bAggregateDB: accounts with an ON UPDATE timestamp (rows 1 and 2 under token 3),
// the stored functions of create (rt26bAggregate) on the plain connection raw, and a
// fenced pool db on it.
func rt26bAggregateDB(t *testing.T, create ...string) (raw, db *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn, append([]string{`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
		upd TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))`,
		`INSERT INTO accounts (id, balance, fence_token, version, upd) VALUES (1, 5, 3, 1, '2000-01-01'), (2, 7, 3, 1, '2000-01-01')`}, create...)...)
	return raw, testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
}

// rt26bClaimRefused runs the claim q on the plain driver (it answers) and then under
// token 8 through db: the claim must fail with ErrUnsupported before anything is sent,
// the transaction stay usable and row 1 keep its token (why says what a success meant).
func rt26bClaimRefused(t *testing.T, raw, db *sql.DB, q, why string) {
	t.Helper()
	var plain any
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := rtx.QueryRow(q).Scan(&plain); err != nil {
		t.Fatalf("set-up: the plain driver: %v", err)
	}
	_ = rtx.Rollback()

	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var got any
	err = tx.QueryRowContext(ctx, q).Scan(&got)
	var tok int64
	serr := tx.QueryRowContext(ctx, `SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok)
	if err == nil {
		t.Fatalf("claim %s: answered %v with no error (the plain driver answers %v), row 1 stamped with token %d: %s; want ErrUnsupported before anything is sent", q, got, plain, tok, why)
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) || serr != nil || tok == 8 {
		t.Fatalf("claim %s: err = %v, then the transaction: %v, row 1's token %d; want ErrUnsupported before anything is sent, the transaction usable and nothing stamped", q, err, serr, tok)
	}
}
