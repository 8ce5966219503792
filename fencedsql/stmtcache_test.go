package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The statement cache (WithStatementCache) over a driver that runs arguments only as
// prepared statements (the fake with skipArgs, as go-sql-driver/mysql without
// interpolateParams): what is prepared and closed, and when.
func TestStatementCache(t *testing.T) {
	ctx := fencedsql.WithToken(context.Background(), 7)
	const a, b, c = `UPDATE accounts SET x = $1 WHERE id = $2`, `UPDATE accounts SET y = $1 WHERE id = $2`, `UPDATE accounts SET z = $1 WHERE id = $2`
	counts := func(rec *fakeRec) [3]int {
		return [3]int{rec.count("PrepareContext"), rec.count("StmtExec") + rec.count("StmtQuery"), rec.count("StmtClose")}
	}
	open := func(t *testing.T, opts ...fencedsql.Option) (*fakeRec, *sql.DB, func(q string) error) {
		rec := newFakeRec()
		db := openFake(t, &fakeDriver{rec: rec, full: true, skipArgs: true}, opts...)
		return rec, db, func(q string) error { _, err := db.ExecContext(ctx, q, 1, 2); return err }
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	want := func(t *testing.T, rec *fakeRec, prepared, executed, closed int) {
		t.Helper()
		if got := counts(rec); got != [3]int{prepared, executed, closed} {
			t.Errorf("prepared, executed, closed = %v, want %v", got, [3]int{prepared, executed, closed})
		}
	}

	t.Run("reused", func(t *testing.T) {
		rec, _, exec := open(t)
		for range 3 {
			must(t, exec(a))
		}
		want(t, rec, 1, 3, 0)
	})
	t.Run("off", func(t *testing.T) {
		rec, _, exec := open(t, fencedsql.WithStatementCache(0))
		must(t, exec(a))
		must(t, exec(a))
		want(t, rec, 2, 2, 2)
	})
	t.Run("least recently used closed first", func(t *testing.T) {
		rec, _, exec := open(t, fencedsql.WithStatementCache(2))
		must(t, exec(a))
		must(t, exec(b))
		must(t, exec(a)) // a is now the most recent
		must(t, exec(c)) // evicts b
		want(t, rec, 3, 4, 1)
		must(t, exec(a)) // still cached
		want(t, rec, 3, 5, 1)
		must(t, exec(b)) // prepared again, evicts c
		want(t, rec, 4, 6, 2)
	})
	t.Run("failed use drops", func(t *testing.T) {
		rec, _, exec := open(t)
		must(t, exec(a))
		rec.failNext = errors.New("boom")
		if err := exec(a); err == nil {
			t.Fatal("the injected failure did not reach the caller")
		}
		want(t, rec, 1, 2, 1)
		must(t, exec(a))
		want(t, rec, 2, 3, 1)
	})
	for _, move := range []string{`SET search_path = other`, `SET LOCAL search_path TO other, public`, `SELECT set_config('search_path', 'other', false)`} {
		t.Run("emptied by "+move, func(t *testing.T) {
			rec, db, exec := open(t)
			must(t, exec(a))
			must(t, exec(b))
			if _, err := db.ExecContext(ctx, move); err != nil {
				t.Fatal(err)
			}
			want(t, rec, 2, 2, 2)
			must(t, exec(a))
			want(t, rec, 3, 3, 2)
		})
	}
	t.Run("emptied by Raw", func(t *testing.T) {
		rec, db, exec := open(t)
		must(t, exec(a))
		conn, err := db.Conn(context.Background())
		must(t, err)
		defer conn.Close()
		must(t, conn.Raw(func(dc any) error { _ = fencedsql.Unwrap(dc); return nil }))
		want(t, rec, 1, 1, 1)
	})
	t.Run("closed with the connection", func(t *testing.T) {
		rec, db, exec := open(t)
		must(t, exec(a))
		must(t, exec(b))
		want(t, rec, 2, 2, 0)
		must(t, db.Close())
		want(t, rec, 2, 2, 2)
	})
	t.Run("in use while its rows are open", func(t *testing.T) {
		rec, db, _ := open(t, fencedsql.WithStatementCache(1))
		conn, err := db.Conn(context.Background())
		must(t, err)
		defer conn.Close()
		rows, err := conn.QueryContext(ctx, a+" RETURNING x", 1, 2)
		must(t, err)
		// The driver's optional Rows interfaces reach the caller through the statement's rows.
		if ct, err := rows.ColumnTypes(); err != nil || ct[0].DatabaseTypeName() != "INT8" {
			t.Errorf("column types through a cached statement's rows: %v, %v", ct, err)
		}
		if _, err := conn.ExecContext(ctx, b, 1, 2); err != nil { // evicts the statement whose rows are open
			t.Fatal(err)
		}
		want(t, rec, 2, 2, 0)
		for rows.Next() {
		}
		must(t, rows.Close())
		want(t, rec, 2, 2, 1)
		var n int64
		must(t, conn.QueryRowContext(ctx, a+" RETURNING x", 1, 2).Scan(&n)) // prepared again, evicts b
		want(t, rec, 3, 3, 2)
	})
}
