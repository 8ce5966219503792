package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	gomysql "github.com/go-sql-driver/mysql"
)

// claimCountSetup makes the accounts table (three rows of owner bob, ids 1-3) plus extra
// statements, and returns a transaction bound to token 10 on a fenced pool.
func claimCountSetup(t *testing.T, extra ...string) (context.Context, *sql.DB, *sql.Tx, string) {
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

// TestClaimReadFailingMidwayReportsReadError (unclear error): a claim's read fails on
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
func TestClaimReadFailingMidwayReportsReadError(t *testing.T) {
	ctx, _, tx, _ := claimCountSetup(t,
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

// TestClaimNextResultSetCountsUnreadRows (over-refusal): a caller reads the first of
// the three rows a claim stamped and moves on with Rows.NextResultSet (a generic
// multi-result reader). The wrapper forwards NextResultSet to go-sql-driver/mysql,
// which discards the unread rows uncounted and answers io.EOF; database/sql then
// closes the rows, Close's drain gets io.EOF at once and judges 1 row against 3
// stamped: the transaction is broken with "its condition reads something that
// UPDATE changed". Before 5009a7e the transaction committed. Right behaviour:
// NextResultSet on counted rows drains (counts) the current result set first, as
// Close does, so that the count is judged on every row the statement returned.
func TestClaimNextResultSetCountsUnreadRows(t *testing.T) {
	ctx, _, tx, _ := claimCountSetup(t)
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
