package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt23a: claims (SELECT … FOR UPDATE in a token-bound transaction) of shapes
// the claim's UPDATE cannot take, or that the server refuses, and a DELETE without
// RETURNING sent with QueryContext.

const selectOnlyTable = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// TestClaimWindowClauseRefused: `SELECT id FROM accounts WHERE id = 1
// WINDOW w AS () FOR UPDATE` is valid PostgreSQL (the plain driver locks the row), but
// the claim's UPDATE cannot take a WINDOW clause. In a token-bound transaction it is
// refused with ErrUnsupported before anything is sent (plan.selectOnlyClause), so the
// caller's transaction is not aborted by a raw syntax error: a later UPDATE runs and
// the transaction commits.
func TestClaimWindowClauseRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, selectOnlyTable, `INSERT INTO accounts VALUES (1, 5, 3, 1), (2, 5, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	const q = `SELECT id FROM accounts WHERE id = 1 WINDOW w AS () FOR UPDATE`

	// The plain driver runs the statement.
	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := rtx.QueryRow(q).Scan(&id); err != nil || id != 1 {
		t.Fatalf("set-up: the plain driver: id %d, err %v", id, err)
	}
	_ = rtx.Rollback()

	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = tx.QueryRowContext(ctx, q).Scan(&id)
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("claim with a WINDOW clause: err = %v; want ErrUnsupported with nothing sent", err)
	}
	// Whatever the claim's verdict, the transaction must still be usable.
	if _, err := tx.ExecContext(ctx, `UPDATE accounts SET balance = balance + 1 WHERE id = 2`); err != nil {
		t.Errorf("the transaction after the claim: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("Commit: %v", err)
	}
}

// TestClaimForUpdateOfUnknownRelationRefused: `SELECT … FOR UPDATE OF other`, where
// other is not in the FROM clause, is an error in PostgreSQL (42P01). In a token-bound
// transaction the claim, which locks the FROM table's rows, is refused with
// ErrUnsupported before anything is sent (an OF list may name only the read's table,
// by its alias if it has one), and nothing is stamped.
func TestClaimForUpdateOfUnknownRelationRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, selectOnlyTable, `CREATE TABLE other (id BIGINT PRIMARY KEY)`,
		`INSERT INTO accounts VALUES (1, 5, 3, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	const q = `SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF other`

	rtx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	rawErr := rtx.QueryRow(q).Scan(&id)
	_ = rtx.Rollback()
	if rawErr == nil {
		t.Fatalf("set-up: the plain driver accepted %s", q)
	}

	ctx := fencedsql.WithToken(context.Background(), 8)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = tx.QueryRowContext(ctx, q).Scan(&id)
	cerr := tx.Commit()
	var tok int64
	if err := raw.QueryRow(`SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Errorf("claim %s: succeeded (row %d, Commit %v, fence_token now %d); the server refuses it: %v", q, id, cerr, tok, rawErr)
	} else if !errors.Is(err, fencedsql.ErrUnsupported) || tok != 3 || cerr != nil {
		t.Errorf("claim %s: err %v, fence_token %d, Commit %v; want ErrUnsupported, nothing stamped, the transaction intact", q, err, tok, cerr)
	}
}
