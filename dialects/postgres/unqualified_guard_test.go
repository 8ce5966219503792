package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/stdlib"
)

// Red-team rt24b: configuration mistakes that would leave a guarded table unguarded,
// or fenced on the wrong column (docs/design.md G13), each now refused.

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
func TestUnqualifiedNameWithDifferentColumnsRefused(t *testing.T) {
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

// RT24B F4b: the same as F4 without any Go option — the registry records
// public.accounts with its columns tok/ver (fencedsql-schema -tables public.accounts
// -token-column tok -version-column ver -apply) and the DSN lists s2.accounts. The
// unqualified `UPDATE accounts` is refused with ErrSchema (the name's guards fence
// different columns), not fenced on s2's fence_token.
func TestUnqualifiedNameWithDifferentColumnsRefusedRegistry(t *testing.T) {
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

// Red-team rt25b: configuration (G13) and claims (G10) on PostgreSQL.

// TestCaseDifferingColumnsOfOneNameRefused (red-team rt25b F3): on PostgreSQL a
// configured column name is exact ("Tok" and tok are two columns), and the guards of
// one name are compared so (dialect.SameColumnName, used by core.ambiguous). Guards:
// s2.accounts on "Tok"/"Ver" and public.accounts on tok/ver, public.accounts carrying
// both pairs. `UPDATE accounts` (public.accounts through the search_path) is not
// decided by the configured qualifiers, and the guards of its name fence different
// columns: it is refused with ErrSchema, and a stale holder (token 5) cannot write
// after token 10 stamped tok through public.accounts (it had passed the check of
// "Tok", which strings.EqualFold took for tok).
func TestCaseDifferingColumnsOfOneNameRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE SCHEMA s2`,
		`CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "Tok" BIGINT NOT NULL DEFAULT 0, "Ver" BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE public.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
			"Tok" BIGINT NOT NULL DEFAULT 0, "Ver" BIGINT NOT NULL DEFAULT 0,
			tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO public.accounts (id, balance) VALUES (1, 0)`,
	)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("s2.accounts", fencedsql.TokenColumn("Tok"), fencedsql.VersionColumn("Ver")),
		fencedsql.Guard("public.accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE public.accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatalf("newer holder (token 10) through public.accounts: %v", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal, tok, qtok int64
	if err := raw.QueryRowContext(ctx, `SELECT balance, tok, "Tok" FROM public.accounts WHERE id = 1`).Scan(&bal, &tok, &qtok); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || bal != 100 {
		t.Errorf(`stale holder (token 5) through the unqualified name after token 10 wrote public.accounts: err = %v, row now balance %d tok %d "Tok" %d; want ErrSchema (the name's guards fence the different columns "Tok" and tok) and balance 100`, err, bal, tok, qtok)
	}
}

// TestGuardTwiceCaseDifferingColumnsRefused (red-team rt25b F3): Guard("accounts",
// "Tok"/"Ver") and Guard("accounts", tok/ver) name two different column pairs on
// PostgreSQL, where configured names are exact; sameColumns compares them as the
// dialect does (dialect.SameColumnName), so the pool refuses the configuration with
// a ConfigError, as for any other pair of different columns. Before, it opened,
// fenced on "Tok" and accepted a stale token's write after token 10 stamped tok.
func TestGuardTwiceCaseDifferingColumnsRefused(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
			"Tok" BIGINT NOT NULL DEFAULT 0, "Ver" BIGINT NOT NULL DEFAULT 0,
			tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 0)`,
	)
	good := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer good.Close()
	if _, err := good.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = 100 WHERE id = 1`); err != nil {
		t.Fatalf("newer holder (token 10): %v", err)
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("Tok"), fencedsql.VersionColumn("Ver")),
		fencedsql.Guard("accounts", fencedsql.TokenColumn("tok"), fencedsql.VersionColumn("ver")))
	defer db.Close()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 666 WHERE id = 1`)
	var bal int64
	if err := raw.QueryRowContext(ctx, `SELECT balance FROM accounts WHERE id = 1`).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	var ce *fencedsql.ConfigError
	if !errors.As(err, &ce) && !errors.Is(err, fencedsql.ErrFenced) || bal != 100 {
		t.Errorf(`a pool given Guard(accounts, "Tok"/"Ver") and Guard(accounts, tok/ver): stale write (token 5) after token 10 on tok: err = %v, balance now %d; want a ConfigError (two different column pairs) and balance 100`, err, bal)
	}
}
