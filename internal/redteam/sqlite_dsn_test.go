package redteam

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// A DSN's _pragma=writable_schema(1) turned writable_schema on for every connection of
// the pool where the wrapper never sees a PRAGMA (it is now refused when the pool
// opens), and a statement on the driver's own connection (Raw) still can; a write to
// sqlite_schema through the fenced pool would then drop the guards' triggers without
// naming them. The write is refused as a write of the schema table, the guards stay,
// and a stale holder cannot re-create a row a newer one deleted.
func TestSQLiteWritableSchemaFromDSN(t *testing.T) {
	ctx := context.Background()
	dsn := "file:" + t.TempDir() + "/w.db?_pragma=busy_timeout(5000)"
	raw, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TABLE acc (id INTEGER PRIMARY KEY, bal INTEGER, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "acc"})
	// The DSN's pragma is refused when the pool opens (sqlite.CheckDSN).
	if bad, err := sql.Open("fenced-sqlite", dsn+"&fenced_tables=acc&_pragma=writable_schema(1)"); err == nil {
		bad.Close()
		t.Fatal("a fenced pool opened with _pragma=writable_schema(1)")
	}
	db, err := sql.Open("fenced-sqlite", dsn+"&fenced_tables=acc")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Turned on where the wrapper does not see it: a statement on the driver's own
	// connection.
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error {
		_, err := fencedsql.Unwrap(dc).(driver.ExecerContext).ExecContext(ctx, "PRAGMA writable_schema = 1", nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	if _, err := conn.ExecContext(tok(5), "INSERT INTO acc (id, bal) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(tok(7), "DELETE FROM acc WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"DELETE FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'acc'",
		"UPDATE main.sqlite_master SET sql = replace(sql, 'IS NOT NULL', 'IS NULL') WHERE type = 'trigger'",
	} {
		if _, err := conn.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("%s through the fenced pool with writable_schema on: err = %v, want ErrUnsupported", q, err)
		}
	}
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'acc'").Scan(&n); err != nil || n == 0 {
		t.Fatalf("the guards' triggers on acc: %d (%v), want them kept", n, err)
	}
	if _, err := conn.ExecContext(tok(6), "INSERT INTO acc (id, bal) VALUES (1, 99)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT of the deleted row: err = %v, want ErrFenced", err)
	}
}
