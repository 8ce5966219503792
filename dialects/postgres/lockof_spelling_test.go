package postgres_test

// Red-team rt33b: PostgreSQL locking reads whose OF lists name only unguarded
// relations (rt31e F3, plan/lockof.go locksOnlyUnguarded).

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestLockOfAliasSpellingRefused (FAIL-OPEN). plan/lockof.go
// locksOnlyUnguarded passes a locking join without a claim when no name of its OF
// lists is (spelled like) the alias of a guarded table or of a subquery. It compares
// names with foldedAt, which is not how PostgreSQL compares them:
//   - PostgreSQL truncates every identifier to 63 bytes (NAMEDATALEN-1), so
//     accounts AS <63×a>x … FOR UPDATE OF <63×a>y names the accounts alias (and
//     (SELECT … FROM accounts) AS <63×a>x … OF <63×a>y the subquery's);
//   - PostgreSQL (UTF8) folds only ASCII letters of an unquoted name, so
//     accounts AS "É" … FOR UPDATE OF É (and AS É … OF "É") are the same name, while
//     foldedAt lowercases the unquoted É to é.
//
// Each statement passes as a plain read with token 8 and PostgreSQL locks the guarded
// accounts row (another session's FOR UPDATE NOWAIT of it fails with 55P03) without
// the claim stamping it (fence_token stays 5): the holder of token 8 holds the row
// lock unfenced, and an older holder's late write is not refused by the stamp the
// claim would have left. Right behaviour: compare names as the server does (truncate to
// 63 bytes, fold ASCII only — the planner's identifier folding for PostgreSQL), or
// answer false for any identifier longer than 63 bytes or with non-ASCII letters:
// then each of these is a locking join naming the guarded table's (or a subquery's)
// alias, refused with a token.
func TestLockOfAliasSpellingRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE ledger (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, amount BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1)`,
		`INSERT INTO ledger (id, account_id, amount) VALUES (10, 1, 7)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	long := strings.Repeat("a", 63)
	for _, q := range []string{
		// the guarded table's alias
		`SELECT l.id FROM ledger l, accounts AS ` + long + `x WHERE ` + long + `x.id = l.account_id FOR UPDATE OF ` + long + `y`,
		// a subquery's alias: locking it locks the rows of the tables it reads
		`SELECT l.id FROM ledger l, (SELECT id FROM accounts) AS ` + long + `x WHERE ` + long + `x.id = l.account_id FOR UPDATE OF ` + long + `y`,
		// PostgreSQL (UTF8) folds only ASCII letters of an unquoted name: É stays É
		`SELECT l.id FROM ledger l, accounts AS "É" WHERE "É".id = l.account_id FOR UPDATE OF É`,
		`SELECT l.id FROM ledger l, accounts AS É WHERE É.id = l.account_id FOR UPDATE OF "É"`,
	} {
		t.Run(q[:60], func(t *testing.T) { lockOfTruncated(t, raw, db, q) })
	}
}

func lockOfTruncated(t *testing.T, raw, db *sql.DB, q string) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	tctx := fencedsql.WithToken(ctx, 8)
	tx, err := db.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var id int64
	if err := tx.QueryRowContext(tctx, q).Scan(&id); err != nil {
		// Refused before anything is sent: the right behaviour.
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("refused with %v, want ErrUnsupported", err)
		}
		return
	}
	// Is the guarded row locked? Another session's NOWAIT lock of it.
	otx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, lockErr := otx.ExecContext(ctx, `SELECT id FROM accounts WHERE id = 1 FOR UPDATE NOWAIT`)
	_ = otx.Rollback()
	var tok int64
	if err := raw.QueryRowContext(ctx, `SELECT fence_token FROM accounts WHERE id = 1`).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	if lockErr != nil && tok != 8 {
		t.Fatalf("FAIL-OPEN: %s passed with token 8 and locked the guarded accounts row 1 (another session's NOWAIT: %v) without claiming it (fence_token %d, not 8); want it refused (the OF name is, truncated to 63 bytes, the accounts alias)", q, lockErr, tok)
	}
	if lockErr == nil {
		t.Fatalf("set-up: the accounts row was not locked: PostgreSQL did not match the truncated names")
	}
}
