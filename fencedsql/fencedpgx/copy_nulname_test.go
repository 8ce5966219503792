package fencedpgx_test

// A copy into a guarded table named with a NUL byte (red-team rt40d F1).

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestCopyFromNameWithNULRefused (red-team rt40d F1). fencedpgx's CopyFrom refuses
// a copy into a guarded table by looking up the pgx.Identifier's parts as given
// (adapterConn.CheckCopy → Planner.Lookup). pgx's Identifier.Sanitize, which builds the
// COPY statement, removes every NUL byte from each part first. So an Identifier whose
// part is the guarded name with a NUL byte inside (pgx.Identifier{"acc\x00ounts"}) is
// judged "not guarded" and then sent as COPY "accounts" … FROM STDIN: rows land in the
// guarded table with no token, no fencing, and a fencing column of the caller's choice
// (here fence_token 999999, locking every real holder out). With no token in the
// context at all.
//
// The copy is refused (ErrUnsupported) whatever the name: no table has a NUL byte in
// its name, and the name judged must be the name sent.
func TestCopyFromNameWithNULRefused(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, testdb.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	db, err := fencedpgx.New(pool, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	// Control: the plain name is refused.
	if _, err := db.CopyFrom(ctx, pgx.Identifier{"accounts"}, []string{"id", "balance"}, pgx.CopyFromRows([][]any{{1, 1}})); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control: CopyFrom accounts: %v; want ErrUnsupported", err)
	}
	// The same through a token-bound transaction (Tx.CopyFrom shares the check).
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 1), pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{"acc\x00ounts"}, []string{"id", "balance", "fence_token"}, pgx.CopyFromRows([][]any{{99, 1, 999999}}))
	cerr := tx.Commit(ctx)
	var rows99 int
	if qerr := pool.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE id = 99`).Scan(&rows99); qerr != nil {
		t.Fatal(qerr)
	}
	if rows99 != 0 || !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("Tx.CopyFrom {\"acc\\x00ounts\"}: copied %d (err %v, commit %v), accounts holds %d row(s) of key 99; want ErrUnsupported and nothing copied", n, err, cerr, rows99)
	}
	for i, id := range []pgx.Identifier{
		{"acc\x00ounts"},
		{"accounts\x00"},
		{"public", "acc\x00ounts"},
		{"pub\x00lic", "accounts"},
	} {
		key := int64(100 + i)
		stale := fencedsql.WithToken(ctx, 1)
		for _, c := range []context.Context{ctx, stale} {
			n, err := db.CopyFrom(c, id, []string{"id", "balance", "fence_token", "version"}, pgx.CopyFromRows([][]any{{key, 1, 999999, 0}}))
			var rows int
			if qerr := pool.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE id = $1`, key).Scan(&rows); qerr != nil {
				t.Fatal(qerr)
			}
			if rows != 0 || !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("CopyFrom %q: copied %d (err %v), accounts holds %d row(s) of key %d; want ErrUnsupported and nothing copied", id, n, err, rows, key)
			}
			pool.Exec(ctx, `DELETE FROM accounts WHERE id = $1`, key)
		}
	}
}

// TestCopyFromNameWithNULRefusedPastGuards: the same copy on a table with the
// database-side guards installed (schema.Check's Fix). A key a holder deleted under
// token 40 comes back from a caller holding no token at all: COPY fires the tombstone
// trigger, but the copied row carries the fencing value the caller chose (999999),
// which the trigger takes for a newer holder's. Through the wrapper no statement can
// choose that value (G4); the copy is the one path that lets it.
func TestCopyFromNameWithNULRefusedPastGuards(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	fencetest.Guard(t, ctx, raw, postgres.Dialect, fschema.GuardSpec{Table: "accounts"})
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db, err := fencedpgx.New(pool, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	tok40 := fencedsql.WithToken(ctx, 40)
	if _, err := db.Exec(tok40, `INSERT INTO accounts (id, balance) VALUES (7, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(tok40, `DELETE FROM accounts WHERE id = 7`); err != nil {
		t.Fatal(err)
	}
	// Control: a stale re-insert through SQL is refused.
	if _, err := db.Exec(fencedsql.WithToken(ctx, 30), `INSERT INTO accounts (id, balance) VALUES (7, 2)`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("control: stale re-insert: %v; want ErrFenced", err)
	}
	n, err := db.CopyFrom(ctx, pgx.Identifier{"acc\x00ounts"}, []string{"id", "balance", "fence_token"}, pgx.CopyFromRows([][]any{{7, 666, 999999}}))
	var rows int
	if qerr := pool.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE id = 7`).Scan(&rows); qerr != nil {
		t.Fatal(qerr)
	}
	if rows != 0 || !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("CopyFrom {\"acc\\x00ounts\"} with no token: copied %d (err %v); key 7, deleted under token 40, is back (%d row); want ErrUnsupported and nothing copied", n, err, rows)
	}
}
