package sqlite_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// red-team rt40b F1: schema.Check given no table list checks every table the database
// records as guarded (every fenced pool on it guards them): a registered table with
// nullable fencing columns and no guard, and a table carrying the guard's triggers but
// not registered, are reported — an empty list never passes as "nothing wrong".
func TestCheckWithoutTablesChecksRecorded(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	const fit = " (id INTEGER PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	stmts := []string{
		"CREATE TABLE chk_registered (id INTEGER PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT, version BIGINT)",
		"CREATE TABLE chk_triggered" + fit,
	}
	stmts = append(stmts, sqlite.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "chk_triggered"}, "fence_token", "version")...)
	raw := testdb.Open(t, "sqlite", dsn, stmts...)
	if err := schema.RegisterTables(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "chk_registered"}); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, raw, sqlite.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]schema.TableReport{}
	for _, r := range reports {
		got[r.Table] = r
	}
	if r, ok := got["chk_registered"]; !ok || r.OK() {
		t.Fatalf("schema.Check without a table list: reports %+v; want chk_registered (registered: nullable fencing columns, no guard) reported with problems", reports)
	}
	if _, ok := got["main.chk_triggered"]; !ok {
		t.Fatalf("schema.Check without a table list: reports %+v; want main.chk_triggered (it carries the guard's triggers) checked", reports)
	}
	// fencedsql-schema -tables chk_triggered: Unlisted names the registered table left out.
	un, err := schema.Unlisted(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "chk_triggered"})
	if err != nil || len(un) != 1 || un[0].Table != "chk_registered" {
		t.Fatalf("Unlisted(chk_triggered) = %+v, %v; want chk_registered", un, err)
	}
}

// With no table list and nothing recorded, Check refuses (a *ConfigError) rather than
// answer no report, which a loop over the reports takes for "all fit".
func TestCheckWithoutTablesNothingRecorded(t *testing.T) {
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t), "CREATE TABLE chk_plain (id INTEGER PRIMARY KEY)")
	reports, err := schema.Check(context.Background(), raw, sqlite.Dialect)
	var ce *schema.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("schema.Check without tables on a database recording none = %+v, %v; want a *ConfigError", reports, err)
	}
}
