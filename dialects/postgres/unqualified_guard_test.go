package postgres_test

// Red-team rt24b: configuration mistakes that would leave a guarded table unguarded,
// or fenced on the wrong column (docs/design.md G13), each now refused.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/stdlib"
)

// RT24B F4. Two configured guards share a name in two schemas with different fencing
// columns: s2.accounts (fence_token/version) and public.accounts (tok/ver — a table
// mid-migration that still carries the old NOT NULL columns too). The planner gives a
// reference that no configured qualifier matches a guard derived from the first guard
// of that name, whatever table it resolves to, so `UPDATE accounts` (public.accounts
// through the search_path) would be fenced on s2's fence_token while `UPDATE
// public.accounts` is fenced on tok: the stale holder (token 5) would pass the check of
// a column the newer holder (token 10) never set. Such a reference is refused before
// anything is sent (core.ambiguous: ErrSchema naming both guards and their columns);
// the references written with a configured qualifier are fenced on that guard's
// columns, and the row keeps the newer holder's balance.
func TestRTrt24bUnqualifiedNameFirstGuardsColumns(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE SCHEMA s2`,
		`CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE public.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO public.accounts (id, balance) VALUES (1, 0)`,
	)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("s2.accounts"),
		fencedsql.Guard("public.accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE public.accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatalf("newer holder (token 10) through public.accounts: %v", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal, tok, ft int64
	if err := raw.QueryRowContext(ctx, `SELECT balance, tok, fence_token FROM public.accounts WHERE id = 1`).Scan(&bal, &tok, &ft); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || bal != 100 {
		t.Errorf("stale holder (token 5) through the unqualified name after token 10 wrote public.accounts: err = %v, row now balance %d tok %d fence_token %d; want ErrSchema (the name's guards fence different columns) and balance 100", err, bal, tok, ft)
	}
}

// RT24B F5. PostgreSQL (before 18) lets an inheritance child drop the NOT NULL it
// inherited (a partition may not), and a fenced UPDATE of the parent that reaches a
// child row carrying a newer token would store the fencing NULL there instead of
// failing. The lazy check of a guarded table judges the fencing columns of its
// descendants too (the PostgreSQL lint, nullableDescendantsQuery): while a child's
// column is nullable, the parent's guarded writes are refused with ErrSchema naming the
// child, nothing is sent, and the child's row keeps its balance and token.
func TestRTrt24bInheritanceChildNullableToken(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE accounts_archive () INHERITS (accounts)`,
		`ALTER TABLE accounts_archive ALTER COLUMN fence_token DROP NOT NULL`,
		`INSERT INTO accounts_archive (id, balance, fence_token, version) VALUES (2, 100, 50, 3)`,
	)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn+"&fenced_tables=accounts"), fencedsql.WithDialect(postgres.Dialect))
	defer db.Close()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = 666 WHERE id = 2`)
	var bal int64
	var tok *int64
	if err := raw.QueryRowContext(ctx, `SELECT balance, fence_token FROM accounts_archive WHERE id = 2`).Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "accounts_archive") || bal != 100 {
		t.Errorf("stale UPDATE (token 10) through the guarded parent of a row with token 50 in an inheritance child whose fence_token is nullable: err = %v, row now balance %d fence_token %v; want ErrSchema naming accounts_archive and the row unchanged", err, bal, tok)
	}
}

// RT24B F6. With multiple inheritance a child of the guarded accounts that also
// inherits from an unguarded ledger holds rows of both, so an UPDATE of ledger reaches
// rows of accounts, newer tokens included. The pool guards the ancestors of every
// guarded table and of each of its descendants (the PostgreSQL AncestorsQuery), so
// ledger is guarded with accounts' columns: a tokenless UPDATE of it is refused with
// ErrNoToken (with a token, the lazy check refuses it: ledger lacks the fencing
// columns), and the row keeps its balance.
func TestRTrt24bMultipleInheritanceCoParent(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE ledger (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE acc_ledger () INHERITS (accounts, ledger)`,
		`INSERT INTO acc_ledger (id, balance, fence_token, version) VALUES (2, 100, 50, 3)`,
	)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn+"&fenced_tables=accounts"), fencedsql.WithDialect(postgres.Dialect))
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE acc_ledger SET balance = 1 WHERE id = 2`); err == nil {
		t.Fatal("control: a tokenless UPDATE naming the child is not refused")
	}
	_, err := db.ExecContext(ctx, `UPDATE ledger SET balance = 666 WHERE id = 2`)
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, `SELECT balance, fence_token FROM accounts WHERE id = 2`).Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrNoToken) || bal != 100 {
		t.Errorf("tokenless UPDATE ledger (a co-parent of accounts' child) of a row of accounts with token 50: err = %v, accounts row now balance %d fence_token %d; want ErrNoToken and the row unchanged", err, bal, tok)
	}
}

// RT24B F4b: the same as F4 without any Go option — the registry records
// public.accounts with its columns tok/ver (fencedsql-schema -tables public.accounts
// -token-column tok -version-column ver -apply) and the DSN lists s2.accounts. The
// unqualified `UPDATE accounts` is refused with ErrSchema (the name's guards fence
// different columns), not fenced on s2's fence_token.
func TestRTrt24bUnqualifiedNameFirstGuardsColumnsRegistry(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE SCHEMA s2`,
		`CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE public.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO public.accounts (id, balance) VALUES (1, 0)`,
	)
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "public.accounts", TokenColumn: "tok", VersionColumn: "ver"}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(postgres.DriverName, dsn+"&fenced_tables=s2.accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE public.accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatalf("newer holder (token 10) through public.accounts: %v", err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal, tok, ft int64
	if err := raw.QueryRowContext(ctx, `SELECT balance, tok, fence_token FROM public.accounts WHERE id = 1`).Scan(&bal, &tok, &ft); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || bal != 100 {
		t.Errorf("stale holder (token 5) through the unqualified name: err = %v, row now balance %d tok %d fence_token %d; want ErrSchema and balance 100", err, bal, tok, ft)
	}
}

// RT24B F9. An unqualified guard guards the table of that name in any schema
// (fencedsql.Guard; design G13 "whatever its qualifier"): a write of tenant2.accounts
// gets a derived guard and is fenced. The relatives of an unqualified guard are those
// of every table of that name (the PostgreSQL DescendantsQuery and AncestorsQuery read
// pg_class by name, not only the table the pool's search_path resolves), so
// tenant2.accounts_2026, a partition of tenant2.accounts, is guarded too: a tokenless
// UPDATE naming it is refused with ErrNoToken, and the row keeps its balance.
func TestRTrt24bOtherSchemaChildOfUnqualifiedGuard(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE SCHEMA tenant2`,
		`CREATE TABLE tenant2.accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) PARTITION BY RANGE (id)`,
		`CREATE TABLE tenant2.accounts_2026 PARTITION OF tenant2.accounts FOR VALUES FROM (0) TO (1000)`,
		`INSERT INTO tenant2.accounts (id, balance, fence_token, version) VALUES (2, 100, 50, 3)`,
	)
	db, err := sql.Open(postgres.DriverName, dsn+"&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE tenant2.accounts SET balance = 1 WHERE id = 2`); err == nil {
		t.Fatal("control: a tokenless UPDATE of tenant2.accounts is not refused")
	}
	_, err = db.ExecContext(ctx, `UPDATE tenant2.accounts_2026 SET balance = 666 WHERE id = 2`)
	var bal, tok int64
	if err := raw.QueryRowContext(ctx, `SELECT balance, fence_token FROM tenant2.accounts WHERE id = 2`).Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrNoToken) || bal != 100 {
		t.Errorf("tokenless UPDATE tenant2.accounts_2026 (partition of the guarded-by-name tenant2.accounts) of a row with token 50: err = %v, row now balance %d fence_token %d; want ErrNoToken and the row unchanged", err, bal, tok)
	}
}
