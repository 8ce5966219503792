package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A quoted schema qualifier differing only in letter case ("S".accounts next to
// s.accounts) names another table: a fenced write through it is refused, nothing
// sent, whether the guard is qualified or not, on a cold pool or after s.accounts was
// checked; the guarded table itself is still fenced.
func TestQuotedSchemaCaseTwinRefused(t *testing.T) {
	for _, guard := range []string{"accounts", "s.accounts"} {
		for _, warm := range []bool{false, true} {
			t.Run(guard+map[bool]string{false: "/cold", true: "/warm"}[warm], func(t *testing.T) {
				dsn := testdb.Postgres(t)
				raw := rawWith(t, dsn,
					`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`CREATE SCHEMA s`,
					`CREATE SCHEMA "S"`,
					`CREATE TABLE s.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`CREATE TABLE "S".accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL DEFAULT 0, version BIGINT NULL DEFAULT 0)`,
					`INSERT INTO s.accounts (id, fence_token) VALUES (1, 10)`,
					`INSERT INTO "S".accounts (id, fence_token) VALUES (1, 10)`,
				)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables="+guard))
				db.SetMaxOpenConns(1)
				if warm {
					if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE s.accounts SET balance = 1 WHERE id = 1`); err != nil {
						t.Fatalf("fresh UPDATE of s.accounts: %v", err)
					}
				}
				_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE "S".accounts SET balance = 666 WHERE id = 1`)
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Errorf(`stale UPDATE "S".accounts: %v; want ErrUnsupported`, err)
				}
				var tok sql.NullInt64
				var bal int64
				if qerr := raw.QueryRowContext(ctx, `SELECT fence_token, balance FROM "S".accounts WHERE id = 1`).Scan(&tok, &bal); qerr != nil {
					t.Fatal(qerr)
				}
				if bal != 0 || !tok.Valid || tok.Int64 != 10 {
					t.Errorf(`"S".accounts row: token %v balance %d; want it unchanged (10, 0)`, tok, bal)
				}
				// The guarded table (written unquoted in any case) is still fenced.
				if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), `UPDATE S.accounts SET balance = 2 WHERE id = 1`); err != nil {
					t.Fatalf("fresh UPDATE of S.accounts: %v", err)
				}
				if _, err := db.ExecContext(fencedsql.WithToken(ctx, 25), `UPDATE s.accounts SET balance = 3 WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("stale UPDATE of s.accounts: %v; want ErrFenced", err)
				}
				if qerr := raw.QueryRowContext(ctx, `SELECT fence_token, balance FROM s.accounts WHERE id = 1`).Scan(&tok, &bal); qerr != nil {
					t.Fatal(qerr)
				}
				if bal != 2 || !tok.Valid || tok.Int64 != 30 {
					t.Errorf("s.accounts row: token %v balance %d; want 30, 2", tok, bal)
				}
			})
		}
	}
}

// PostgreSQL folds only the ASCII letters of an unquoted name: CAFÉ is the table
// "cafÉ", a case twin of the guarded café. A fenced write of it is refused, nothing
// sent; café itself is still fenced.
func TestNonASCIICaseTwinUnquotedRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE café (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE "cafÉ" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL DEFAULT 0, version BIGINT NULL DEFAULT 0)`,
		`INSERT INTO "cafÉ" (id, fence_token) VALUES (1, 10)`,
		`INSERT INTO café (id, fence_token) VALUES (1, 10)`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=café"))
	for _, q := range []string{`UPDATE CAFÉ SET balance = 666 WHERE id = 1`, `UPDATE "cafÉ" SET balance = 666 WHERE id = 1`} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("stale %s: %v; want ErrUnsupported", q, err)
		}
	}
	var tok sql.NullInt64
	var bal int64
	if qerr := raw.QueryRowContext(ctx, `SELECT fence_token, balance FROM "cafÉ" WHERE id = 1`).Scan(&tok, &bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal != 0 || !tok.Valid || tok.Int64 != 10 {
		t.Errorf(`"cafÉ" row: token %v balance %d; want it unchanged (10, 0)`, tok, bal)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE CAFé SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatalf("fresh UPDATE CAFé (café): %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE café SET balance = 2 WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale UPDATE café: %v; want ErrFenced", err)
	}
	if qerr := raw.QueryRowContext(ctx, `SELECT fence_token, balance FROM café WHERE id = 1`).Scan(&tok, &bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal != 1 || !tok.Valid || tok.Int64 != 20 {
		t.Errorf("café row: token %v balance %d; want 20, 1", tok, bal)
	}
}
