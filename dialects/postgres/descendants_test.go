package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/stdlib"
)

// Red-team rt27a: a second catalogue of hostile SQL through fenced-pgx.

func starOpen(t *testing.T, setup ...string) (raw, db *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	st := append([]string{`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 50, 3), (2, 200, 50, 3)`}, setup...)
	raw = testdb.Open(t, "pgx", dsn, st...)
	db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	return raw, db
}

func starRow(t *testing.T, raw *sql.DB, id int64) (n int, tok, ver int64) {
	t.Helper()
	err := raw.QueryRow(`SELECT count(*), coalesce(max(fence_token), 0), coalesce(max(version), 0) FROM accounts WHERE id = $1`, id).Scan(&n, &tok, &ver)
	if err != nil {
		t.Fatal(err)
	}
	return
}

// TestDescendantsStarDeleteFenced: `DELETE FROM accounts * WHERE …` (the
// legacy "and descendants" spelling, accepted by PostgreSQL 15) is taken by the
// DELETE planner as the target with alias "*": the second statement of the fenced
// DELETE qualifies the ctid as `*.ctid`, a syntax error. Right behaviour: either
// delete the row (with a fresh token) like the raw driver, or refuse the statement
// with ErrUnsupported before sending anything; never an untyped syntax error, and
// never after the stamping statement has already changed the row.
func TestDescendantsStarDeleteFenced(t *testing.T) {
	raw, db := starOpen(t)
	ctx := fencedsql.WithToken(context.Background(), 100)
	_, err := db.ExecContext(ctx, `DELETE FROM accounts * WHERE id = 1`)
	n, tok, ver := starRow(t, raw, 1)
	t.Logf("err=%v; row 1: present=%d token=%d version=%d", err, n, tok, ver)
	if err != nil && n == 1 && (tok != 50 || ver != 3) {
		t.Fatalf("data change on error: the DELETE failed (%v) but row 1 was stamped (token %d, version %d)", err, tok, ver)
	}
	if err != nil && !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("untyped error (over-refusal): %v; want the row deleted, or ErrUnsupported before sending", err)
	}
	if err == nil && n != 0 {
		t.Fatalf("DELETE reported success but row 1 is still there")
	}
}

// TestDescendantsStarUpdateFromFenced: `UPDATE accounts * SET … FROM ledger WHERE …`
// (the legacy "table and its descendants" marker, which PostgreSQL 15 still accepts)
// is read by the UPDATE planner as the target with alias "*": the fencing assignments
// are qualified as `*."version"` and `*."fence_token"`, and that text is sent. The
// server answers a raw syntax error (42601), which is not a fencedsql error, and
// aborts the caller's transaction (an earlier write in it is lost with it). Right
// behaviour: fence it like `UPDATE accounts SET … FROM ledger` (the qualifier is the
// table name when there is no alias), or refuse it with ErrUnsupported before
// sending anything, leaving the transaction usable.
func TestDescendantsStarUpdateFromFenced(t *testing.T) {
	raw, db := starOpen(t, `CREATE TABLE ledger (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL)`,
		`INSERT INTO ledger VALUES (1, 1)`)
	ctx := fencedsql.WithToken(context.Background(), 100)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 1 WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, `UPDATE accounts * SET balance = 0 FROM ledger WHERE ledger.account_id = accounts.id`)
	if err != nil && !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("untyped server error, statement sent malformed (transaction aborted): %v; want it fenced (as without the '*') or ErrUnsupported before sending", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	_ = raw
}

// TestOnlyParenFencedInTransaction: PostgreSQL's relation_expr takes `ONLY ( name )`
// as well as `ONLY name`. The planner reads the parenthesised spelling as the plain one
// (red-team rt34c F4; until then it refused it, a kept over-refusal): in a caller's
// transaction a fresh token's UPDATE, DELETE and locking read of row 1 are fenced and
// run, stamping (or deleting) row 1 only, and the transaction stays usable.
func TestOnlyParenFencedInTransaction(t *testing.T) {
	for _, q := range []string{
		`UPDATE ONLY (accounts) SET balance = 0 WHERE id = 1`,
		`DELETE FROM ONLY (accounts) WHERE id = 1`,
		`SELECT id, balance FROM ONLY (accounts) WHERE id = 1 FOR UPDATE`,
	} {
		t.Run(q, func(t *testing.T) {
			raw, db := starOpen(t)
			ctx := fencedsql.WithToken(context.Background(), 100)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			rows, err := tx.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("ONLY (accounts) with a fresh token: %v, want it fenced and run", err)
			}
			for rows.Next() {
			}
			if err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = 7 WHERE id = 2`); err != nil {
				t.Fatalf("transaction unusable: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			n, tok, _ := starRow(t, raw, 1)
			if deleting := q[0] == 'D'; deleting && n != 0 || !deleting && (n != 1 || tok != 100) {
				t.Fatalf("row 1: present=%d token=%d; want deleted by the DELETE, else stamped with 100", n, tok)
			}
		})
	}
}

// RT24B F5. PostgreSQL (before 18) lets an inheritance child drop the NOT NULL it
// inherited (a partition may not), and a fenced UPDATE of the parent that reaches a
// child row carrying a newer token would store the fencing NULL there instead of
// failing. The lazy check of a guarded table judges the fencing columns of its
// descendants too (the PostgreSQL lint, nullableDescendantsQuery): while a child's
// column is nullable, the parent's guarded writes are refused with ErrSchema naming the
// child, nothing is sent, and the child's row keeps its balance and token.
func TestNullableTokenInInheritanceChildRefused(t *testing.T) {
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
func TestMultipleInheritanceCoParentGuarded(t *testing.T) {
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

// RT24B F9. An unqualified guard guards the table of that name in any schema
// (fencedsql.Guard; design G13 "whatever its qualifier"): a write of tenant2.accounts
// gets a derived guard and is fenced. The relatives of an unqualified guard are those
// of every table of that name (the PostgreSQL DescendantsQuery and AncestorsQuery read
// pg_class by name, not only the table the pool's search_path resolves), so
// tenant2.accounts_2026, a partition of tenant2.accounts, is guarded too: a tokenless
// UPDATE naming it is refused with ErrNoToken, and the row keeps its balance.
func TestOtherSchemaChildOfUnqualifiedGuardGuarded(t *testing.T) {
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
