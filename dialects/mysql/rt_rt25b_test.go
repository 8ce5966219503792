package mysql_test

// Red-team rt25b: claims (SELECT … FOR UPDATE in a token-bound transaction) on
// MariaDB after the rt23a fixes.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt25bClaimOrderByAggregateRawError (red-team rt25b F5): an aggregate in a
// locking read's ORDER BY (ORDER BY COUNT(*), ORDER BY SUM(balance)) without GROUP BY
// makes the SELECT an aggregate query, which MariaDB runs over every row the WHERE
// selects, and which the claim's fencing UPDATE cannot copy (MariaDB refused it with
// the raw error 1111). With a token the claim is refused with ErrUnsupported before
// anything is sent (plan.collapsingSelect runs over the ORDER BY too): nothing is
// stamped and the transaction stays usable.
func TestRTrt25bClaimOrderByAggregateRawError(t *testing.T) {
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

// TestRTrt25bUserAggregateClaimPassesCount (red-team rt25b F2): a user-defined
// aggregate's one row is as many rows as a claim that stamps one row, so the count
// check cannot tell it (the claim returned NULL, computed over no stamped row, where
// the plain driver answers 1). A claim whose select list calls a function that is not
// a known MySQL/MariaDB built-in scalar one (MariaDB's CREATE AGGREGATE FUNCTION
// agg_count here, read with a WHERE on an ON UPDATE CURRENT_TIMESTAMP column) is
// refused with a token before anything is sent: nothing is stamped.
func TestRTrt25bUserAggregateClaimPassesCount(t *testing.T) {
	raw, db := rt26bAggregateDB(t, rt26bAggregate("agg_count"))
	rt26bClaimRefused(t, raw, db, `SELECT agg_count(id) FROM accounts WHERE id = 1 AND upd < '2001-01-01' FOR UPDATE`,
		"the user-defined aggregate's one row passed the count though it was computed over no stamped row (G10: fail closed)")
}

// TestRTrt25bClaimLeadingSpaceAliasWrongRow (red-team rt25b F1): MariaDB drops the
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
func TestRTrt25bClaimLeadingSpaceAliasWrongRow(t *testing.T) {
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

// TestRTrt25bClaimImplicitOutputNameRawError (red-team rt25b F5): MariaDB names a
// select-list expression without an alias by its text, and an ORDER BY may name that
// output column back-quoted (ORDER BY `-balance`, `balance * -1`, `ABS(balance-7)`).
// The claim takes such a name for an output name (plan.implicitOutputs) and refuses
// it before a LIMIT with ErrUnsupported before anything is sent, where it had copied
// it into its fencing UPDATE and failed with the server's raw error 1054.
func TestRTrt25bClaimImplicitOutputNameRawError(t *testing.T) {
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
