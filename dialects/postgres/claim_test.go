package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/pgconn"
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

// On a partitioned table, and on an inheritance parent, a claim by row locator
// (ORDER BY, LIMIT, NOWAIT: rows found by ctid, which identifies a row only within one
// physical table) is refused before anything is sent; a claim by its WHERE alone runs,
// and stamps and returns exactly its rows (one row per physical table here, each at
// ctid (0,1)).
func TestClaimLocatorRefusedAcrossPartitions(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const cols = "(id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	raw := rawWith(t, dsn,
		"CREATE TABLE parted "+cols+" PARTITION BY RANGE (id)",
		"CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100)",
		"CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (100) TO (200)",
		"CREATE TABLE inh "+cols,
		"CREATE TABLE inh_1 () INHERITS (inh)",
		"CREATE TABLE inh_2 () INHERITS (inh)",
		"INSERT INTO parted (id, balance) VALUES (1, 10), (150, 20)",
		"INSERT INTO inh_1 (id, balance) VALUES (1, 10)",
		"INSERT INTO inh_2 (id, balance) VALUES (150, 20)",
	)
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=parted,inh")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tk := uint64(10)
	for _, table := range []string{"parted", "inh"} {
		for _, form := range []string{
			"SELECT id FROM %s WHERE id = $1 FOR UPDATE NOWAIT",
			"SELECT id FROM %s WHERE id >= $1 ORDER BY id LIMIT 1 FOR UPDATE",
			"SELECT id FROM %s WHERE id = $1 FOR UPDATE",
		} {
			q := strings.Replace(form, "%s", table, 1)
			t.Run(q, func(t *testing.T) {
				tk++
				bound := fencedsql.WithToken(ctx, tk)
				tx, err := db.BeginTx(bound, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
				var ids []int64
				rows, err := tx.QueryContext(bound, q, 150)
				if err == nil {
					for rows.Next() {
						var id int64
						if err := rows.Scan(&id); err != nil {
							t.Fatal(err)
						}
						ids = append(ids, id)
					}
					err = rows.Err()
				}
				locator := strings.Contains(q, "NOWAIT") || strings.Contains(q, "LIMIT")
				if locator {
					if !errors.Is(err, fencedsql.ErrUnsupported) {
						t.Fatalf("claim by row locator: %v %v, want ErrUnsupported", ids, err)
					}
					return
				}
				if err != nil || len(ids) != 1 || ids[0] != 150 {
					t.Fatalf("the claimed read returned %v, %v; want [150]", ids, err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				var tok1, tok150 int64
				if err := raw.QueryRowContext(ctx, "SELECT (SELECT fence_token FROM "+table+" WHERE id = 1), (SELECT fence_token FROM "+table+" WHERE id = 150)").Scan(&tok1, &tok150); err != nil {
					t.Fatal(err)
				}
				if tok150 != int64(tk) || tok1 != 0 {
					t.Fatalf("tokens after the claim: row 1 %d (want 0), row 150 %d (want %d)", tok1, tok150, tk)
				}
			})
		}
	}
}

// Red-team rt26b: claims (SELECT … FOR UPDATE in a token-bound transaction) on
// PostgreSQL after the rt25b fixes.

// claimSameRow runs q under the plain driver and then as a claim with token 8
// and fails unless the claim runs and returns the plain driver's first id.
func claimSameRow(t *testing.T, raw, db *sql.DB, q string) {
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

// TestClaimIsNullSelectReturnsPlainRow (red-team rt26b F6): a select list that ends
// in x IS NULL / IS NOT NULL / IS TRUE right before FROM is not IS [NOT] DISTINCT
// FROM (plan.selectFrom skips a FROM only after DISTINCT), so the claim runs and
// returns the plain driver's row.
func TestClaimIsNullSelectReturnsPlainRow(t *testing.T) {
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
		t.Run(q, func(t *testing.T) { claimSameRow(t, raw, db, q) })
	}
}
