package fencedsql_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// SQLite runs every guarded DELETE as two statements. Its keyed form names the rows
// the fencing UPDATE stamped by the rowids that UPDATE returns, so the DELETE deletes
// only those, or fails with ErrUnsupported (the count) and changes nothing. Restricted
// by the token only, a condition that selects differently the second time — an
// aggregate over a column the UPDATE's trigger changes — deleted a row the same
// holder had stamped before, with the counts matching; and a condition reading the
// clock was refused outright. The trigger keeps the ranks in a table of their own: one
// writing accounts itself is an own-trigger door the lazy check refuses (red-team
// rt48j F4).
func TestSQLiteRowidDelete(t *testing.T) {
	const table = `CREATE TABLE accounts (id INTEGER PRIMARY KEY, rnk INTEGER NOT NULL, expires TEXT NOT NULL DEFAULT '2000-01-01', fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`
	const rows = `INSERT INTO accounts (id, rnk, fence_token, version) VALUES (1, 1, 0, 0), (2, 2, 10, 1), (3, 3, 10, 1)`
	const ranks = `CREATE TABLE ranks AS SELECT id, rnk FROM accounts`
	const rerank = `CREATE TRIGGER rerank AFTER UPDATE OF fence_token ON accounts BEGIN UPDATE ranks SET rnk = rnk + 10 WHERE id = NEW.id; END`
	fencetest.RunDeleteCases(t, []fencetest.DeleteTableCase{
		{Name: "AggregateOverTriggerColumn", Setup: []string{table, rows, ranks, rerank},
			Del: "DELETE FROM accounts WHERE id = (SELECT id FROM ranks ORDER BY rnk LIMIT 1)", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "Clock", Setup: []string{table, rows},
			Del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP AND id = 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		{Name: "ClockNow", Setup: []string{table, rows},
			Del: "DELETE FROM accounts WHERE expires < datetime('now') AND id < 3", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1, 2}, Run: true}},
		{Name: "Aliased", Setup: []string{table, rows},
			Del: "DELETE FROM accounts AS a WHERE a.rnk < 3", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1, 2}, Run: true}},
		{Name: "ManyRows", Setup: []string{table, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 500) INSERT INTO accounts (id, rnk) SELECT i, i FROM s`},
			Del: "DELETE FROM accounts WHERE rnk <= 400", DeleteCase: fencetest.DeleteCase{Stamped: fencetest.Seq(1, 400), Run: true}},
		// Rows its statements cannot name by rowid: the token-only form, whose refusals stay.
		{Name: "WithoutRowid", Setup: []string{strings.Replace(table, "version BIGINT NOT NULL DEFAULT 0)", "version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID", 1), rows},
			Del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP", DeleteCase: fencetest.DeleteCase{Refused: true}},
		// A column called rowid hides that alias, not _rowid_, by which the DELETE names rows.
		{Name: "ColumnCalledRowid", Setup: []string{strings.Replace(table, "rnk INTEGER", "rowid INTEGER, rnk INTEGER", 1), rows},
			Del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1, 2, 3}, Run: true}},
		{Name: "ColumnCalled_rowid_", Setup: []string{strings.Replace(table, "rnk INTEGER", "_rowid_ INTEGER, rnk INTEGER", 1), rows},
			Del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP", DeleteCase: fencetest.DeleteCase{Refused: true}},
		{Name: "WithoutRowidByKey", Setup: []string{strings.Replace(table, "version BIGINT NOT NULL DEFAULT 0)", "version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID", 1), rows},
			Del: "DELETE FROM accounts WHERE id = 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
	}, func(t *testing.T, setup []string) (raw, fenced *sql.DB) { return sqlitePair(t, setup...) })
}

// sqlitePair creates a SQLite file with setup (run on a plain connection) and opens
// it fenced (fenced_tables=accounts) on one connection, so that temp objects made on
// that connection are seen by the fenced statements. raw is the plain pool.
func sqlitePair(t *testing.T, setup ...string) (raw, fenced *sql.DB) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "t.db")
	raw, err := sql.Open("sqlite", "file:"+file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, s := range setup {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if fenced, err = sql.Open("fenced-sqlite", "file:"+file+"?fenced_tables=accounts"); err != nil {
		t.Fatal(err)
	}
	fenced.SetMaxOpenConns(1)
	fenced.SetMaxIdleConns(1)
	t.Cleanup(func() { fenced.Close() })
	return raw, fenced
}

// TestSQLiteRowidDeleteReturning: DELETE … RETURNING in the caller's transaction,
// keyed: the caller's columns of exactly the rows stamped.
func TestSQLiteRowidDeleteReturning(t *testing.T) {
	db := openSQLite(t, "")
	ctx := fencedsql.WithToken(context.Background(), 10)
	if _, err := db.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (1, 5), (2, 6), (3, 50)`); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx, `DELETE FROM accounts WHERE balance < 10 RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if err := rows.Err(); err != nil || len(got) != 2 {
		t.Fatalf("DELETE … RETURNING: %v, %v; want ids 1 and 2", got, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// Red-team rt23a: a DELETE without RETURNING sent with QueryContext.

// TestDeleteThroughQueryRunsAsExecSQLite: SQLite's two-statement DELETE (the fencing
// UPDATE … RETURNING _rowid_, then the DELETE restricted to those rowids) of a DELETE
// without RETURNING sent with QueryContext runs as Exec runs it and answers with no
// rows (fencetest.RunDeleteThroughQuery).
func TestDeleteThroughQueryRunsAsExecSQLite(t *testing.T) {
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)`)
	fencetest.RunDeleteThroughQuery(t, raw, testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts"), "?")
}
