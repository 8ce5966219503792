package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A claimed SELECT … FOR UPDATE NOWAIT keeps NOWAIT: a row another transaction holds
// fails at once (lock_not_available), instead of the claim waiting for it.
func TestClaimKeepsNowait(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	for _, q := range []string{
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance) VALUES (1, 100)",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	holder, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback() //nolint:errcheck
	if _, err := holder.ExecContext(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bound := fencedsql.WithToken(ctx, 5)
	tx, err := db.BeginTx(bound, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	start := time.Now()
	var bal int64
	err = tx.QueryRowContext(bound, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE NOWAIT", 1).Scan(&bal)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("claim with NOWAIT on a held row: %v, want lock_not_available (55P03)", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the claim waited %v for the held row", d)
	}
}
