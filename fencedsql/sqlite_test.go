// The wrapper's behaviour on the embedded SQLite: fencing, versioned DELETE and the lazy schema check.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// ---- behaviour on the embedded SQLite ----

func openSQLite(t *testing.T, opts string) *sql.DB {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "t.db") + "?fenced_tables=accounts&fenced_allow=ddl" + opts
	db, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// A guarded DELETE whose WHERE clause checks the version the business code read (the
// classic optimistic delete) must delete the row, or fail; it must never report success
// with 0 rows because the wrapper's fencing UPDATE changed the version first.
func TestSQLiteDeleteWithVersionInWhere(t *testing.T) {
	db := openSQLite(t, "")
	ctx := fencedsql.WithToken(context.Background(), 7)
	if _, err := db.ExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (?, ?)`, 1, 10); err != nil {
		t.Fatal(err)
	}
	var ver int64
	if err := db.QueryRowContext(ctx, `SELECT version FROM accounts WHERE id = ?`, 1).Scan(&ver); err != nil {
		t.Fatal(err)
	}
	res, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = ? AND version = ?`, 1, ver)
	if err != nil {
		return // refusing the form is acceptable
	}
	n, _ := res.RowsAffected()
	var left int
	db.QueryRow(`SELECT count(*) FROM accounts`).Scan(&left)
	if n != 1 || left != 0 {
		t.Errorf("DELETE … WHERE version = %d (the current version) succeeded with %d rows affected and %d rows left; want the row deleted", ver, n, left)
	}
}

// docs/design.md G1, G2, G3 on a real database: equal tokens are accepted, a lower one fails with
// ErrFenced and changes nothing, even for a multi-row statement.
func TestSQLiteFencing(t *testing.T) {
	db := openSQLite(t, "")
	w := func(tk uint64, q string, args ...any) error {
		_, err := db.ExecContext(fencedsql.WithToken(context.Background(), tk), q, args...)
		return err
	}
	if err := w(5, `INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0)`); err != nil {
		t.Fatal(err)
	}
	if err := w(5, `UPDATE accounts SET balance = balance + 1`); err != nil {
		t.Fatal(err)
	}
	if err := w(6, `UPDATE accounts SET balance = balance + 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	err := w(5, `UPDATE accounts SET balance = balance + 100`)
	var fe *fencedsql.FencedError
	if !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &fe) || fe.Token != 5 || fe.Table != "accounts" {
		t.Fatalf("stale multi-row UPDATE: %v", err)
	}
	if err := w(5, `DELETE FROM accounts`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale DELETE: %v", err)
	}
	type row struct{ bal, tok, ver int64 }
	var got []row
	rows, err := db.Query(`SELECT balance, fence_token, version FROM accounts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		rows.Scan(&r.bal, &r.tok, &r.ver)
		got = append(got, r)
	}
	rows.Close()
	want := []row{{1, 5, 2}, {2, 6, 3}}
	if !slices.Equal(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	// ExpectVersion: a stale version fails with ErrVersionConflict, the current one works.
	vctx := fencedsql.ExpectVersion(fencedsql.WithToken(context.Background(), 6), 2)
	if _, err := db.ExecContext(vctx, `UPDATE accounts SET balance = 0 WHERE id = 2`); !errors.Is(err, fencedsql.ErrVersionConflict) {
		t.Errorf("stale version: %v", err)
	}
	vctx = fencedsql.ExpectVersion(fencedsql.WithToken(context.Background(), 6), 3)
	if _, err := db.ExecContext(vctx, `UPDATE accounts SET balance = 0 WHERE id = 2`); err != nil {
		t.Errorf("current version: %v", err)
	}
	// Upserts: a stale token fails, a newer one updates; the qualified forms work.
	upsert := `INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance`
	if err := w(4, upsert, 1, 50); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale upsert: %v", err)
	}
	if err := w(9, upsert, 1, 50); err != nil {
		t.Errorf("upsert: %v", err)
	}
	if err := w(9, `INSERT INTO main.accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance`, 1, 51); err != nil {
		t.Errorf("schema-qualified upsert: %v", err)
	}
	if err := w(9, `INSERT INTO accounts AS a (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = a.balance + 1`, 1, 0); err != nil {
		t.Errorf("aliased upsert: %v", err)
	}
	if err := w(9, `INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT DO NOTHING`, 1, 0); err != nil {
		t.Errorf("DO NOTHING: %v", err)
	}
	var r row
	db.QueryRow(`SELECT balance, fence_token, version FROM accounts WHERE id = 1`).Scan(&r.bal, &r.tok, &r.ver)
	if r != (row{52, 9, 5}) {
		t.Errorf("row 1 after upserts = %v, want {52 9 5}", r)
	}
	// The schema check passed for this table and found the real columns.
	if err := w(9, `INSERT INTO accounts (id) VALUES (3)`); err != nil {
		t.Errorf("insert: %v", err)
	}
}

// The lazy schema check against a real table without the fencing columns.
func TestSQLiteSchemaCheck(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "s.db") + "?fenced_tables=plain&fenced_allow=ddl"
	db, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE plain (id INTEGER PRIMARY KEY, x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(context.Background(), 1), `UPDATE plain SET x = 1`)
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("err = %v, want ErrSchema", err)
	}
	var se *fencedsql.SchemaError
	if !errors.As(err, &se) || !strings.Contains(se.Fix, `ALTER TABLE plain ADD COLUMN "fence_token" BIGINT NOT NULL DEFAULT 0`) {
		t.Errorf("SchemaError = %+v", se)
	}
	// Applying the fix makes the write work (failures are not cached).
	for _, ddl := range strings.Split(se.Fix, "; ") {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 1), `UPDATE plain SET x = 1`); err != nil {
		t.Errorf("after the fix: %v", err)
	}
}
