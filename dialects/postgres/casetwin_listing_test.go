package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guarded name listed in fenced_tables with upper-case letters (fenced_tables=
// ACCOUNTS or Accounts: PostgreSQL reads the unquoted name as accounts, and so does
// the pool's lazy check) guards accounts; the quoted case twin "ACCOUNTS" /
// "Accounts" is another table, and a fenced write naming it is refused
// (ErrUnsupported), as with fenced_tables=accounts (red-team rt51f F1: the planner
// compared the quoted name with the listing as written, took the twin for the
// guarded table, and a twin with nullable fencing columns stored a stale write's
// fencing NULL).
func TestUpperCaseListingRefusesQuotedTwin(t *testing.T) {
	// The third pair is the control: a lower-case listing, refused before the fix too.
	for _, c := range []struct{ listed, twin string }{{"ACCOUNTS", "ACCOUNTS"}, {"Accounts", "Accounts"}, {"accounts", "ACCOUNTS"}} {
		listed, twin := c.listed, c.twin
		t.Run(listed, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			for _, q := range []string{
				"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
				`CREATE TABLE "` + twin + `" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT, version BIGINT)`,
				`INSERT INTO "` + twin + `" VALUES (1, 0, 10, 1)`,
			} {
				if _, err := raw.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables="+listed))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE "`+twin+`" SET balance = 5 WHERE id = 1`)
			var b int64
			var tok sql.NullInt64
			if e := raw.QueryRow(`SELECT balance, fence_token FROM "`+twin+`" WHERE id = 1`).Scan(&b, &tok); e != nil {
				t.Fatal(e)
			}
			if err == nil {
				t.Fatalf(`fenced_tables=%s (public.accounts): a stale write (token 5) to the quoted case twin "%s" (row at token 10, nullable fencing columns) was accepted: balance=%d fence_token=%v; want ErrUnsupported (a quoted case twin)`, listed, twin, b, tok)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) && !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("refused with %v", err)
			}
		})
	}
}

// The same through the registry: the table registered as "ACCOUNTS" (RegisterTables
// with the unquoted upper-case spelling), a pool that lists nothing of it.
func TestUpperCaseRegistryRefusesQuotedTwin(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE orders (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		`CREATE TABLE "ACCOUNTS" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT, version BIGINT)`,
		`INSERT INTO "ACCOUNTS" VALUES (1, 0, 10, 1)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "ACCOUNTS"}); err != nil {
		t.Skipf("RegisterTables refused the spelling: %v", err)
	}
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE "ACCOUNTS" SET balance = 5 WHERE id = 1`)
	var b int64
	var tok sql.NullInt64
	raw.QueryRow(`SELECT balance, fence_token FROM "ACCOUNTS" WHERE id = 1`).Scan(&b, &tok)
	if err == nil {
		t.Fatalf(`registered as ACCOUNTS (public.accounts): a stale write to the quoted twin "ACCOUNTS" was accepted: balance=%d fence_token=%v`, b, tok)
	}
	t.Logf("refused: %v", err)
}
