package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt26b: the claim planner's allow-list of MySQL/MariaDB built-in scalar
// functions (plan.scalarBuiltins, collapsingSelect) after the rt25b fixes.

// storedAggregate is a MariaDB user-defined aggregate counting its rows, named name.
func storedAggregate(name string) string {
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

// TestNonNativeBuiltinNameClaimRefused (red-team rt26b F1): FORMAT_BYTES
// and FORMAT_PICO_TIME are MySQL 8 functions that MariaDB 10.11 lacks, so a bare
// format_bytes(id) there calls the current database's stored function, which CREATE
// AGGREGATE FUNCTION can make an aggregate (computed over no stamped row, it would
// pass the count of a claim that stamped one). plan.scalarBuiltins no longer lists
// them: the claim is refused with ErrUnsupported before anything is sent, the
// transaction stays usable and nothing is stamped.
func TestNonNativeBuiltinNameClaimRefused(t *testing.T) {
	raw, db := aggregateDB(t, storedAggregate("format_bytes"))
	q := `SELECT format_bytes(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`
	claimRefusedNothingStamped(t, raw, db, q, "format_bytes is no MariaDB built-in, the bare call ran the stored aggregate over no stamped row")
}

// claimSameRow runs q under the plain driver and then as a claim with token 8
// and fails unless the claim runs and returns the plain driver's first id.
func claimSameRow(t *testing.T, raw, db interface {
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

// TestClaimIsNullSelectReturnsPlainRow (red-team rt26b F6): a select list that ends
// in x IS NULL, x IS NOT NULL or x IS TRUE right before FROM is not IS [NOT] DISTINCT
// FROM (plan.selectFrom skips a FROM only after DISTINCT), so
// SELECT id, closed_at IS NULL FROM accounts WHERE id = 1 FOR UPDATE is claimed and
// returns the plain driver's row.
func TestClaimIsNullSelectReturnsPlainRow(t *testing.T) {
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
		t.Run(q, func(t *testing.T) { claimSameRow(t, raw, db, q) })
	}
}

// TestSpacedBuiltinNameClaimRefused (red-team rt26b F7): with
// IGNORE_SPACE off (the default) MySQL/MariaDB parse names such as SUBSTR, NOW, TRIM
// as a built-in only when '(' follows at once; `substr (id)` calls the stored
// function substr of the current database, which may be an aggregate. A claim whose
// select list or ORDER BY calls a function with a blank or comment between its name
// and '(' is refused with ErrUnsupported before anything is sent (plan.collapsingSelect),
// the transaction stays usable and nothing is stamped.
func TestSpacedBuiltinNameClaimRefused(t *testing.T) {
	raw, db := aggregateDB(t, storedAggregate("`substr`"))
	q := `SELECT substr (id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`
	claimRefusedNothingStamped(t, raw, db, q, "the blank makes substr (…) a call of the stored aggregate, computed over no stamped row")
}

// TestCallWordNameClaimRefused (red-team rt26b F8): ESCAPE and AGAINST
// are not reserved on MariaDB, so `escape(id)` and `against(id)` call the stored
// function of that name, which may be an aggregate. plan.callWords no longer excuses
// them (AGAINST only right after MATCH (…)): the claims are refused with
// ErrUnsupported before anything is sent, and nothing is stamped.
func TestCallWordNameClaimRefused(t *testing.T) {
	raw, db := aggregateDB(t, storedAggregate("`escape`"), storedAggregate("`against`"))
	for _, q := range []string{
		`SELECT escape(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`,
		`SELECT against(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' LOCK IN SHARE MODE`,
	} {
		t.Run(q, func(t *testing.T) {
			claimRefusedNothingStamped(t, raw, db, q, "the call ran the stored aggregate over no stamped row")
		})
	}
}

// aggregateDB: accounts with an ON UPDATE timestamp (rows 1 and 2 under token 3),
// the stored functions of create (storedAggregate) on the plain connection raw, and a
// fenced pool db on it.
func aggregateDB(t *testing.T, create ...string) (raw, db *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw = testdb.Open(t, "mysql", dsn, append([]string{`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
		upd TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6))`,
		`INSERT INTO accounts (id, balance, fence_token, version, upd) VALUES (1, 5, 3, 1, '2000-01-01'), (2, 7, 3, 1, '2000-01-01')`}, create...)...)
	return raw, testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
}

// claimRefusedNothingStamped runs the claim q on the plain driver (it answers) and then under
// token 8 through db: the claim must fail with ErrUnsupported before anything is sent,
// the transaction stay usable and row 1 keep its token (why says what a success meant).
func claimRefusedNothingStamped(t *testing.T, raw, db *sql.DB, q, why string) {
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

// Red-team rt25b: claims (SELECT … FOR UPDATE in a token-bound transaction) on
// MariaDB after the rt23a fixes.

// TestClaimOrderByAggregateRefused (red-team rt25b F5): an aggregate in a
// locking read's ORDER BY (ORDER BY COUNT(*), ORDER BY SUM(balance)) without GROUP BY
// makes the SELECT an aggregate query, which MariaDB runs over every row the WHERE
// selects, and which the claim's fencing UPDATE cannot copy (MariaDB refused it with
// the raw error 1111). With a token the claim is refused with ErrUnsupported before
// anything is sent (plan.collapsingSelect runs over the ORDER BY too): nothing is
// stamped and the transaction stays usable.
func TestClaimOrderByAggregateRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id FROM accounts WHERE id > 0 ORDER BY COUNT(*) FOR UPDATE`,
		`SELECT id FROM accounts WHERE id > 0 ORDER BY COUNT(*) LIMIT 1 FOR UPDATE`,
		`SELECT id FROM accounts WHERE id > 0 ORDER BY SUM(balance) LIMIT 1 LOCK IN SHARE MODE`,
	} {
		t.Run(q, func(t *testing.T) {
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := rtx.QueryRow(q).Scan(&id); err != nil {
				t.Fatalf("set-up: the plain driver runs it: %v", err)
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
				t.Errorf("claim: err = %v; want ErrUnsupported before anything is sent (an aggregate in ORDER BY collapses the read's rows), not the server's raw error on the wrapper's UPDATE", err)
			}
		})
	}
}

// TestUserAggregateClaimRefused (red-team rt25b F2): a user-defined
// aggregate's one row is as many rows as a claim that stamps one row, so the count
// check cannot tell it (the claim returned NULL, computed over no stamped row, where
// the plain driver answers 1). A claim whose select list calls a function that is not
// a known MySQL/MariaDB built-in scalar one (MariaDB's CREATE AGGREGATE FUNCTION
// agg_count here, read with a WHERE on an ON UPDATE CURRENT_TIMESTAMP column) is
// refused with a token before anything is sent: nothing is stamped.
func TestUserAggregateClaimRefused(t *testing.T) {
	raw, db := aggregateDB(t, storedAggregate("agg_count"))
	claimRefusedNothingStamped(t, raw, db, `SELECT agg_count(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`,
		"the user-defined aggregate's one row passed the count though it was computed over no stamped row (G10: fail closed)")
}
