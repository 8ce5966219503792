package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt19eSetup makes the accounts table (three rows of owner bob, ids 1-3) plus extra
// statements, and returns a transaction bound to token 10 on a fenced pool.
func rt19eSetup(t *testing.T, extra ...string) (context.Context, *sql.DB, *sql.Tx, string) {
	t.Helper()
	dsn := testdb.MySQL(t)
	stmts := append([]string{
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(20) NOT NULL, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, owner) VALUES (1, 'bob'), (2, 'bob'), (3, 'bob')",
	}, extra...)
	testdb.Open(t, "mysql", dsn, stmts...)
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() }) //nolint:errcheck
	return ctx, fenced, tx, dsn
}

// TestRT19eAggregateClaimQueryRow (red-team rt19e F1): a locking read whose select
// list collapses its rows — `SELECT COUNT(*) … FOR UPDATE`, DISTINCT — returns rows
// that are not the rows it locks, so its claim cannot be counted against the stamp
// (TestRT19eAggregateClaimHidesDroppedRow shows what that hid). Read with QueryRow
// such a claim went through uncounted until the count was judged on Close too, and
// was then refused with a reason blaming its condition. It is now refused by the
// planner, with a token, naming the aggregate or DISTINCT, before anything is sent:
// nothing stamped. A window aggregate (OVER) keeps its rows and is claimed.
func TestRT19eAggregateClaimQueryRow(t *testing.T) {
	for _, c := range []struct{ sel, why string }{
		{"COUNT(*)", "aggregate (COUNT())"},
		{"SUM(balance)", "aggregate (SUM())"},
		{"DISTINCT owner", "DISTINCT"},
		{"DISTINCTROW owner", "DISTINCT"},
		{"COUNT(*) OVER ()", ""},
		{"(SELECT COUNT(*) FROM accounts a2 WHERE a2.id < 0)", ""},
	} {
		t.Run(c.sel, func(t *testing.T) {
			ctx, db, tx, _ := rt19eSetup(t)
			var v any
			err := tx.QueryRowContext(ctx, "SELECT "+c.sel+" FROM accounts WHERE owner = ? FOR UPDATE", "bob").Scan(&v)
			if c.why == "" {
				if err != nil {
					t.Fatalf("claim: %v", err)
				}
				return
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), c.why) {
				t.Fatalf("claim: %v, want ErrUnsupported naming %s", err, c.why)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			var stamped int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE fence_token <> 0").Scan(&stamped); err != nil || stamped != 0 {
				t.Fatalf("%d rows stamped (err %v), want none", stamped, err)
			}
			// Without a token it is an ordinary locking read.
			plain, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Rollback() //nolint:errcheck
			if err := plain.QueryRowContext(ctx, "SELECT "+c.sel+" FROM accounts WHERE owner = ? FOR UPDATE", "bob").Scan(&v); err != nil {
				t.Fatalf("the same read without a token: %v", err)
			}
		})
	}
}

// TestRT19eClaimReadFailsMidwayBlamesCount (unclear error): a claim's read fails on
// its second row (a stored function in the select list SIGNALs). The caller reads
// with rows.Next: Next returns the SIGNAL, database/sql closes the rows, and Close's
// drain calls the driver's Next again — go-sql-driver/mysql answers io.EOF after an
// error packet — so the count is judged on the rows read before the failure (1 of 3
// stamped): the transaction is marked broken with the inexact-count refusal ("its
// condition reads something that UPDATE changed", counted in the unsupported metric)
// before keepStampOnFailure can mark it with the real error. Commit then reports the
// count refusal, not the SIGNAL. Right behaviour: after the rows reported an error,
// Close does not drain or judge the count (the read failed; its error is the cause),
// and Commit's NotCommitted error wraps the SIGNAL (errors.As finds the MySQLError
// 1644).
func TestRT19eClaimReadFailsMidwayBlamesCount(t *testing.T) {
	ctx, _, tx, _ := rt19eSetup(t,
		"CREATE FUNCTION rt19e_boom(x BIGINT) RETURNS BIGINT DETERMINISTIC BEGIN IF x = 2 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'rt19e boom'; END IF; RETURN x; END")
	// The call is in a scalar subquery: a claim refuses a stored function called in
	// its select list itself (it may be a user-defined aggregate, rt25b F2).
	rows, err := tx.QueryContext(ctx, "SELECT (SELECT rt19e_boom(id)) FROM accounts WHERE owner = ? ORDER BY id FOR UPDATE", "bob")
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	got, err := scanIDs(rows)
	if err == nil || !strings.Contains(err.Error(), "rt19e boom") {
		t.Fatalf("read %v, err %v: want the SIGNAL", got, err)
	}
	cerr := tx.Commit()
	if cerr == nil {
		t.Fatal("Commit succeeded after a failed claim read")
	}
	if !errors.Is(cerr, fencedsql.ErrNotCommitted) {
		t.Errorf("Commit: %v, want ErrNotCommitted", cerr)
	}
	var me *gomysql.MySQLError
	if !errors.As(cerr, &me) || strings.Contains(cerr.Error(), "stamped 3") {
		t.Fatalf("Commit blames the row count, not the read's failure: %v", cerr)
	}
}

// TestRT19eClaimNextResultSetSkipsCount (over-refusal): a caller reads the first of
// the three rows a claim stamped and moves on with Rows.NextResultSet (a generic
// multi-result reader). The wrapper forwards NextResultSet to go-sql-driver/mysql,
// which discards the unread rows uncounted and answers io.EOF; database/sql then
// closes the rows, Close's drain gets io.EOF at once and judges 1 row against 3
// stamped: the transaction is broken with "its condition reads something that
// UPDATE changed". Before 5009a7e the transaction committed. Right behaviour:
// NextResultSet on counted rows drains (counts) the current result set first, as
// Close does, so that the count is judged on every row the statement returned.
func TestRT19eClaimNextResultSetSkipsCount(t *testing.T) {
	ctx, _, tx, _ := rt19eSetup(t)
	rows, err := tx.QueryContext(ctx, "SELECT id FROM accounts WHERE owner = ? FOR UPDATE", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	for rows.NextResultSet() {
	}
	if err := rows.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit after reading one row and NextResultSet: %v", err)
	}
}

// TestRT19eAggregateClaimHidesDroppedRow (fail-open of the count check): the count
// check exists so that a claimed read whose selection differs from its fencing
// UPDATE's ("a column the database updates on every UPDATE", here MySQL's ON UPDATE
// CURRENT_TIMESTAMP) is never kept. Its row-wise form is refused: `SELECT id FROM
// accounts WHERE id = ? AND updated_at = '2000-01-01' FOR UPDATE` stamps row 1, which
// moves updated_at, its read then finds nothing, and 0 rows against 1 stamped breaks
// the transaction (the control subtest). Under an aggregate the read always returns
// one row: the same condition with COUNT(*) stamps the row, reads COUNT = 0 — the row
// it matched and stamped is reported absent — and one row against one stamped passes:
// the caller acts on "no such row" and Commit keeps the stamp. (With 5009a7e the same
// aggregate over 0 or 3 rows is refused: the check judges the aggregate's output, not
// its input.) Right behaviour: a claimed read whose select list aggregates (COUNT,
// SUM, … without GROUP BY; DISTINCT) cannot be counted against the stamp and is
// refused by the planner (or counted on its input); never accepted on the row count
// of its output.
func TestRT19eAggregateClaimHidesDroppedRow(t *testing.T) {
	for _, sel := range []string{"id", "COUNT(*)"} {
		t.Run(sel, func(t *testing.T) {
			ctx, _, tx, _ := rt19eSetup(t, "ALTER TABLE accounts ADD COLUMN updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)")
			var n int64
			err := tx.QueryRowContext(ctx, "SELECT "+sel+" FROM accounts WHERE id = ? AND updated_at = '2000-01-01 00:00:00' FOR UPDATE", 1).Scan(&n)
			if err != nil {
				if errors.Is(err, fencedsql.ErrUnsupported) {
					t.Logf("refused: %v", err)
					return // refused: the right behaviour
				}
				t.Fatalf("claim: %v", err)
			}
			cerr := tx.Commit()
			t.Fatalf("the claim stamped row 1 (updated_at 2000-01-01) and its read returned %d; Commit: %v — the row-wise read of the same statement is refused by the count check", n, cerr)
		})
	}
}
