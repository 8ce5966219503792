package postgres_test

// Red-team rt25b: configuration (G13) and claims (G10) on PostgreSQL.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// TestRTrt25bAmbiguousColumnsCaseFolded (red-team rt25b F3): on PostgreSQL a
// configured column name is exact ("Tok" and tok are two columns), and the guards of
// one name are compared so (dialect.SameColumnName, used by core.ambiguous). Guards:
// s2.accounts on "Tok"/"Ver" and public.accounts on tok/ver, public.accounts carrying
// both pairs. `UPDATE accounts` (public.accounts through the search_path) is not
// decided by the configured qualifiers, and the guards of its name fence different
// columns: it is refused with ErrSchema, and a stale holder (token 5) cannot write
// after token 10 stamped tok through public.accounts (it had passed the check of
// "Tok", which strings.EqualFold took for tok).
func TestRTrt25bAmbiguousColumnsCaseFolded(t *testing.T) {
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

// TestRTrt25bGuardTwiceCaseFoldedColumns (red-team rt25b F3): Guard("accounts",
// "Tok"/"Ver") and Guard("accounts", tok/ver) name two different column pairs on
// PostgreSQL, where configured names are exact; sameColumns compares them as the
// dialect does (dialect.SameColumnName), so the pool refuses the configuration with
// a ConfigError, as for any other pair of different columns. Before, it opened,
// fenced on "Tok" and accepted a stale token's write after token 10 stamped tok.
func TestRTrt25bGuardTwiceCaseFoldedColumns(t *testing.T) {
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

// TestRTrt25bKeywordValueBlanksAroundEquals (red-team rt25b F6): libpq's and pgx's
// keyword/value form allows blanks around '=' ("host = h user = fenced …
// fenced_tables = accounts"), and the wrapper reads it as pgx does (removeKeyValue: a
// keyword is the trimmed text before '=', blanks after it skipped): the pool guards
// accounts (a tokenless UPDATE of it is ErrNoToken). Before, the user name "fenced"
// was read as a keyword and refused as an unknown DSN parameter.
func TestRTrt25bKeywordValueBlanksAroundEquals(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	rawWith(t, dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 0)`)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf("host = %s port = %d user = %s password = '%s' dbname = %s sslmode = disable fenced_tables = accounts",
		cfg.Host, cfg.Port, cfg.User, strings.ReplaceAll(cfg.Password, "'", `\'`), cfg.Database)
	db, err := sql.Open("fenced-pgx", kv)
	if err == nil {
		defer db.Close()
		_, err = db.ExecContext(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`)
	}
	if !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("sql.Open(fenced-pgx, \"… fenced_tables = accounts\"): tokenless UPDATE accounts: err = %v; want ErrNoToken (the DSN, valid for pgx, lists accounts)", err)
	}
}

// TestRTrt25bClaimOrderByQuestionColumnBreaksTx (red-team rt25b F4b): PostgreSQL names
// a select-list expression that has no name of its own "?column?", and an ORDER BY may
// name it (SELECT id, -balance FROM accounts ORDER BY "?column?" … FOR UPDATE orders
// by -balance). The claim takes "?column?" for an output name: before a LIMIT it is
// refused with ErrUnsupported before anything is sent, and without one it is left out
// of the claim's selection and kept by the read (row 2 claimed first). The claim never
// sends it as a column (the server's raw 42703 had aborted the caller's transaction).
func TestRTrt25bClaimOrderByQuestionColumnBreaksTx(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1), (3, 6, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT id, -balance FROM accounts WHERE id > 0 ORDER BY "?column?" FOR UPDATE`,
		`SELECT id, -balance FROM accounts WHERE id > 0 ORDER BY "?column?" LIMIT 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			rtx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			if err := rtx.QueryRow(q).Scan(&id, new(any)); err != nil || id != 2 {
				t.Fatalf("set-up: the plain driver: first row %d, err %v; want row 2", id, err)
			}
			_ = rtx.Rollback()
			tctx := fencedsql.WithToken(ctx, 8)
			tx, err := db.BeginTx(tctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			id = 0
			err = tx.QueryRowContext(tctx, q).Scan(&id, new(any))
			_, after := tx.ExecContext(tctx, `SELECT 1`)
			if !(errors.Is(err, fencedsql.ErrUnsupported) || err == nil && id == 2) || after != nil {
				t.Errorf("claim: first row %d, err = %v; the transaction afterwards: %v; want row 2 claimed (no LIMIT) or ErrUnsupported before anything is sent, and the transaction usable", id, err, after)
			}
		})
	}
}

// TestRTrt25bClaimSubqueryOutputNameWrongRow (red-team rt25b F1b): PostgreSQL names a
// scalar subquery's output column after the subquery's one target, which a `*` over a
// function returning TABLE(balance bigint) names balance without the word appearing
// in the select list. ORDER BY balance then means that output column: in
//
//	SELECT id, (SELECT * FROM rt25b_neg(id)) FROM accounts WHERE id > 0 ORDER BY balance LIMIT 1 FOR UPDATE
//
// the server orders by -id and selects row 3. An item whose output name its text need
// not show (a `*` inside it, a composite's expansion, (TABLE …), (VALUES …)) may name
// any output (plan.unreadableOutput), so a bare ORDER BY name before a LIMIT is
// refused with ErrUnsupported before anything is sent: the claim never stamps and
// returns row 1 (as it did), which the statement does not select.
func TestRTrt25bClaimSubqueryOutputNameWrongRow(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 7, 3, 1), (3, 6, 3, 1)`,
		`CREATE FUNCTION rt25b_neg(bigint) RETURNS TABLE(balance bigint) LANGUAGE sql IMMUTABLE AS 'SELECT -$1'`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	q := `SELECT id, (SELECT * FROM rt25b_neg(id)) FROM accounts WHERE id > 0 ORDER BY balance LIMIT 1 FOR UPDATE`
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := rtx.QueryRow(q).Scan(&id, new(any)); err != nil || id != 3 {
		t.Fatalf("set-up: the plain driver: row %d, err %v; want row 3 (ordered by the subquery's output column balance)", id, err)
	}
	_ = rtx.Rollback()
	tctx := fencedsql.WithToken(ctx, 8)
	tx, err := db.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	id = 0
	err = tx.QueryRowContext(tctx, q).Scan(&id, new(any))
	var stamped []int64
	if rows, serr := tx.QueryContext(tctx, `SELECT id FROM accounts WHERE fence_token = 8 ORDER BY id`); serr == nil {
		for rows.Next() {
			var s int64
			_ = rows.Scan(&s)
			stamped = append(stamped, s)
		}
		rows.Close()
	}
	if errors.Is(err, fencedsql.ErrUnsupported) && len(stamped) == 0 {
		return
	}
	if err == nil && id == 3 && len(stamped) == 1 && stamped[0] == 3 {
		return
	}
	t.Errorf("claim: row %d, err = %v, rows stamped %v; the statement selects row 3: want ErrUnsupported with nothing stamped (or row 3 claimed), never another row stamped and returned", id, err, stamped)
}
