package fencedsql_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// SQLite runs every guarded DELETE as two statements. Its keyed form names the rows
// the fencing UPDATE stamped by the rowids that UPDATE returns, so the DELETE deletes
// only those, or fails with ErrUnsupported (the count) and changes nothing. Restricted
// by the token only, a condition that selects differently the second time — an
// aggregate over a column the UPDATE's trigger changes — deleted a row the same
// holder had stamped before, with the counts matching; and a condition reading the
// clock was refused outright.
func TestSQLiteRowidDelete(t *testing.T) {
	const table = `CREATE TABLE accounts (id INTEGER PRIMARY KEY, rnk INTEGER NOT NULL, expires TEXT NOT NULL DEFAULT '2000-01-01', fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`
	const rows = `INSERT INTO accounts (id, rnk, fence_token, version) VALUES (1, 1, 0, 0), (2, 2, 10, 1), (3, 3, 10, 1)`
	const rerank = `CREATE TRIGGER rerank AFTER UPDATE OF fence_token ON accounts BEGIN UPDATE accounts SET rnk = rnk + 10 WHERE id = NEW.id; END`
	for _, tc := range []struct {
		name, del    string
		setup        []string
		stamped      []int64
		run, refused bool
	}{
		{name: "AggregateOverTriggerColumn", setup: []string{table, rows, rerank},
			del: "DELETE FROM accounts WHERE rnk = (SELECT min(rnk) FROM accounts)", stamped: []int64{1}},
		{name: "Clock", setup: []string{table, rows},
			del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP AND id = 1", stamped: []int64{1}, run: true},
		{name: "ClockNow", setup: []string{table, rows},
			del: "DELETE FROM accounts WHERE expires < datetime('now') AND id < 3", stamped: []int64{1, 2}, run: true},
		{name: "Aliased", setup: []string{table, rows},
			del: "DELETE FROM accounts AS a WHERE a.rnk < 3", stamped: []int64{1, 2}, run: true},
		{name: "ManyRows", setup: []string{table, `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 500) INSERT INTO accounts (id, rnk) SELECT i, i FROM s`},
			del: "DELETE FROM accounts WHERE rnk <= 400", stamped: fencetest.Seq(1, 400), run: true},
		// Rows its statements cannot name by rowid: the token-only form, whose refusals stay.
		{name: "WithoutRowid", setup: []string{strings.Replace(table, "version BIGINT NOT NULL DEFAULT 0)", "version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID", 1), rows},
			del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP", refused: true},
		{name: "ColumnCalledRowid", setup: []string{strings.Replace(table, "rnk INTEGER", "rowid INTEGER, rnk INTEGER", 1), rows},
			del: "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP", refused: true},
		{name: "WithoutRowidByKey", setup: []string{strings.Replace(table, "version BIGINT NOT NULL DEFAULT 0)", "version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID", 1), rows},
			del: "DELETE FROM accounts WHERE id = 1", stamped: []int64{1}, run: true},
	} {
		for _, inTx := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/inTx=%v", tc.name, inTx), func(t *testing.T) {
				dsn := "file:" + filepath.Join(t.TempDir(), "t.db") + "?fenced_tables=accounts"
				raw, err := sql.Open("sqlite", dsn[:strings.Index(dsn, "?")])
				if err != nil {
					t.Fatal(err)
				}
				defer raw.Close()
				for _, s := range tc.setup {
					if _, err := raw.Exec(s); err != nil {
						t.Fatalf("%s: %v", s, err)
					}
				}
				db, err := sql.Open("fenced-sqlite", dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				before := fencetest.IDs(t, raw)
				ctx := fencedsql.WithToken(context.Background(), 10)
				if inTx {
					var tx *sql.Tx
					if tx, err = db.BeginTx(ctx, nil); err == nil {
						if _, err = tx.ExecContext(ctx, tc.del); err == nil {
							err = tx.Commit()
						} else {
							_ = tx.Rollback()
						}
					}
				} else {
					_, err = db.ExecContext(ctx, tc.del)
				}
				fencetest.CheckDeleteExact(t, fencetest.DeleteCase{Stamped: tc.stamped, Run: tc.run, Refused: tc.refused}, tc.del, err, before, fencetest.IDs(t, raw))
			})
		}
	}
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
