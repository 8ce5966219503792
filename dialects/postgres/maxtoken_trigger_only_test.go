package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
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
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := testdb.Open(t, "pgx", dsn, "CREATE TABLE mt_accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, lease_token BIGINT NOT NULL DEFAULT 0, row_version BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0)")
	spec := schema.GuardSpec{Table: "mt_accounts", TokenColumn: "lease_token", VersionColumn: "row_version"}
	fencetest.Guard(t, ctx, raw, postgres.Dialect, spec)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("mt_accounts", fencedsql.TokenColumn("lease_token"), fencedsql.VersionColumn("row_version")))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 500), "INSERT INTO mt_accounts (id, balance) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	m, err := schema.MaxToken(ctx, raw, postgres.Dialect)
	var ce *schema.MaxTokenColumnsError
	if !errors.As(err, &ce) {
		t.Errorf("MaxToken = %d, %v; mt_accounts (guarded on lease_token, no registry row) accepted token 500: want a *MaxTokenColumnsError", m, err)
	}
	if m, err := schema.MaxToken(ctx, raw, postgres.Dialect, spec); err != nil || m != 500 {
		t.Errorf("MaxToken(mt_accounts, lease_token) = %d, %v; want 500", m, err)
	}
}
