package mysql_test

import (
	"context"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMaxTokenReadsEveryRegistryRow (red-team rt40c F1, MySQL/MariaDB): the registry's
// rows are not merged by their lower-cased name — Accounts and accounts are two tables
// where table names keep their case (lower_case_table_names=0) — so MaxToken without a
// table list reads each: the twin holding token 500, read second (the registry is
// ordered by its binary key), is not dropped.
func TestMaxTokenReadsEveryRegistryRow(t *testing.T) {
	ctx := context.Background()
	const cols = " (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	raw := testdb.Open(t, "mysql", testdb.MySQL(t))
	var lctn int
	if err := raw.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lctn); err != nil {
		t.Fatal(err)
	}
	if lctn != 0 {
		t.Skip("table names fold on this server: no case twins")
	}
	for _, q := range []string{
		"CREATE TABLE mt_rows" + cols, "CREATE TABLE Mt_Rows" + cols,
		"INSERT INTO mt_rows VALUES (1, 500, 1)", "INSERT INTO Mt_Rows VALUES (1, 10, 1)",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "mt_rows"}, schema.GuardSpec{Table: "Mt_Rows"}); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(ctx, raw, mysql.Dialect); err != nil || m != 500 {
		t.Fatalf("MaxToken = %d, %v; want 500 (mt_rows, registered after its twin Mt_Rows, holds token 500)", m, err)
	}
}
