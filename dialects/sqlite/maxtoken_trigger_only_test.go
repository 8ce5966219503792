package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// MaxToken without tables reads a table the database records as guarded by its
// triggers alone (no registry row) in the default columns only when its guard is the
// default columns' guard: accounts, guarded on lease_token and carrying an ordinary
// fence_token column, makes it fail with a *MaxTokenColumnsError instead of answering
// below the token 500 the table accepted; ledger, guarded trigger-only on the default
// columns, is still read (red-team rt42c F2).
func TestMaxTokenTriggerOnlyOtherColumnsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	file := "file:" + t.TempDir() + "/r.db?_pragma=busy_timeout(5000)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, lease_token INTEGER NOT NULL DEFAULT 0, row_version INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE ledger (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO ledger VALUES (1, 700, 1)",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "ledger"})
	if m, err := schema.MaxToken(ctx, raw, sqlite.Dialect); err != nil || m != 700 {
		t.Fatalf("MaxToken with ledger guarded trigger-only on the default columns = %d, %v; want 700", m, err)
	}
	spec := schema.GuardSpec{Table: "accounts", TokenColumn: "lease_token", VersionColumn: "row_version"}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, spec)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&moderncsqlite.Driver{}, file), fencedsql.WithDialect(sqlite.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("lease_token"), fencedsql.VersionColumn("row_version")))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 900), "INSERT INTO accounts (id, balance) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	m, err := schema.MaxToken(ctx, raw, sqlite.Dialect)
	var ce *schema.MaxTokenColumnsError
	if !errors.As(err, &ce) {
		t.Errorf("MaxToken = %d, %v; accounts (guarded on lease_token, no registry row) accepted token 900: want a *MaxTokenColumnsError", m, err)
	}
	if m, err := schema.MaxToken(ctx, raw, sqlite.Dialect, spec, schema.GuardSpec{Table: "ledger"}); err != nil || m != 900 {
		t.Errorf("MaxToken(accounts with its columns, ledger) = %d, %v; want 900", m, err)
	}
}
