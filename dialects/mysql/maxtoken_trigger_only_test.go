package mysql_test

import (
	"context"
	"errors"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A table guarded on lease_token without a registry row is found by its triggers
// alone; MaxToken without tables must not read it in the default column fence_token
// (here an ordinary column): it fails with a *MaxTokenColumnsError, and named with its
// column it answers the token the table accepted (red-team rt42c F2).
func TestMaxTokenTriggerOnlyOtherColumnsRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, lease_token BIGINT NOT NULL DEFAULT 0, row_version BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	spec := schema.GuardSpec{Table: "accounts", TokenColumn: "lease_token", VersionColumn: "row_version"}
	fencetest.Guard(t, ctx, raw, mysql.Dialect, spec)
	app := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, dsn), fencedsql.WithDialect(mysql.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("lease_token"), fencedsql.VersionColumn("row_version")))
	defer app.Close()
	if _, err := app.ExecContext(fencedsql.WithToken(ctx, 500), "INSERT INTO accounts (id, balance) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	m, err := schema.MaxToken(ctx, raw, mysql.Dialect)
	var ce *schema.MaxTokenColumnsError
	if !errors.As(err, &ce) {
		t.Errorf("MaxToken = %d, %v; accounts (guarded on lease_token, no registry row) accepted token 500: want a *MaxTokenColumnsError", m, err)
	}
	if m, err := schema.MaxToken(ctx, raw, mysql.Dialect, spec); err != nil || m != 500 {
		t.Errorf("MaxToken(accounts, lease_token) = %d, %v; want 500", m, err)
	}
}
