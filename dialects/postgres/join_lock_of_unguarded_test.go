package postgres_test

// Red-team rt31e F3: a locking join whose OF list names only unguarded relations (PostgreSQL 15).

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestJoinLockingOfOnlyUnguardedPasses (over-refusal). A locking read over a
// join whose locking clause names only an UNGUARDED relation — PostgreSQL's
// FOR UPDATE OF l / FOR NO KEY UPDATE OF l, "lock the ledger rows of accounts that are
// still open" — locks no row of the guarded table: PostgreSQL locks only the
// relations the OF list names (checked below: another session's FOR UPDATE NOWAIT of
// the accounts row succeeds while the read holds its locks). Yet with a token it was
// refused as "a locking SELECT over a join … that reads a guarded table" before the fix
// (plan/claim.go lockingRead: any join that names a guarded table), while the same
// read written with the guarded table in a subquery (WHERE EXISTS (SELECT … FROM
// accounts …) FOR UPDATE) passes as a plain locking read with LockThrough.
// Right behaviour: a locking clause whose OF list names only relations that are not
// (aliases of) guarded tables is sent as written, like the subquery form (it needs no
// claim: nothing guarded is locked); the refusal stays for a bare FOR UPDATE or an OF
// list naming the guarded table's alias.
func TestJoinLockingOfOnlyUnguardedPasses(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE ledger (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, amount BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 1), (2, 0, 5, 1)`,
		`INSERT INTO ledger (id, account_id, amount) VALUES (10, 1, 7), (20, 2, 9)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`SELECT l.id FROM ledger l JOIN accounts a ON a.id = l.account_id WHERE a.balance > 0 FOR UPDATE OF l`,
		`SELECT l.id FROM ledger l, accounts a WHERE a.id = l.account_id AND a.balance > 0 FOR NO KEY UPDATE OF l`,
	} {
		t.Run(q, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			// What the server locks: the plain driver's read leaves the accounts row free.
			rtx, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var rid int64
			if err := rtx.QueryRowContext(ctx, q).Scan(&rid); err != nil || rid != 10 {
				t.Fatalf("set-up: the plain driver runs it: id %d, %v", rid, err)
			}
			otx, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := otx.ExecContext(ctx, `SELECT id FROM accounts WHERE id = 1 FOR UPDATE NOWAIT`); err != nil {
				t.Fatalf("set-up: the read locked the accounts row after all (%v): the statement is not harmless", err)
			}
			_ = otx.Rollback()
			_ = rtx.Rollback()

			tctx := fencedsql.WithToken(ctx, 8)
			tx, err := db.BeginTx(tctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var id int64
			if err := tx.QueryRowContext(tctx, q).Scan(&id); err != nil {
				t.Fatalf("over-refusal: %s: %v; want it sent as written (it locks only ledger rows; the plain driver returns ledger row %d)", q, err, rid)
			}
			if id != rid {
				t.Fatalf("returned %d, the plain driver %d", id, rid)
			}
		})
	}
}
