package postgres_test

// Red-team rt26b: claims (SELECT … FOR UPDATE in a token-bound transaction) on
// PostgreSQL after the rt25b fixes.

import (
	"context"
	"database/sql"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt26bClaimSameRow runs q under the plain driver and then as a claim with token 8
// and fails unless the claim runs and returns the plain driver's first id.
func rt26bClaimSameRow(t *testing.T, raw, db *sql.DB, q string) {
	t.Helper()
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var pid int64
	var pv any
	if err := rtx.QueryRow(q).Scan(&pid, &pv); err != nil {
		t.Fatalf("set-up: the plain driver runs it: %v", err)
	}
	_ = rtx.Rollback()
	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	var v any
	if err := tx.QueryRowContext(ctx, q).Scan(&id, &v); err != nil {
		t.Fatalf("over-refusal: %s: %v; want it claimed (the plain driver returns row %d)", q, err, pid)
	}
	if id != pid {
		t.Fatalf("claim returned row %d; the plain driver row %d", id, pid)
	}
}

// TestRTrt26bClaimIsNullSelectRefused (red-team rt26b F6): a select list that ends
// in x IS NULL / IS NOT NULL / IS TRUE right before FROM is not IS [NOT] DISTINCT
// FROM (plan.selectFrom skips a FROM only after DISTINCT), so the claim runs and
// returns the plain driver's row.
func TestRTrt26bClaimIsNullSelectRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, closed_at TIMESTAMPTZ NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 5), (2, 7)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id, closed_at IS NULL FROM accounts WHERE id = 1 FOR UPDATE`,
		`SELECT id, closed_at IS NOT NULL FROM accounts WHERE id = 1 FOR UPDATE`,
		`SELECT id, (balance > 0) IS TRUE FROM accounts WHERE id = 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) { rt26bClaimSameRow(t, raw, db, q) })
	}
}
