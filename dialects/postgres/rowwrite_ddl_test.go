package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestAlterColumnTypeRefusedThroughPool (red-team rt36a F1, fail-open under
// WithDDL): commit 7f4b65c refuses ALTER TABLE … ALTER COLUMN … TYPE … USING on a
// guarded table whatever WithDDL says, because it rewrites every row without the row
// triggers ("any column changed unfenced"). The same rewrite happens without USING:
// PostgreSQL applies the column's assignment cast to every row. `ALTER COLUMN balance
// TYPE numeric(19,-6)` (PostgreSQL 15+, negative scale) rounds every balance to a
// multiple of 1,000,000 (1,400,000 becomes 1,000,000), and `TYPE bigint` afterwards
// restores the column type; both pass through a pool with fenced_allow=ddl and change
// every row with no fencing token and no row trigger. (The fencing columns themselves
// are protected by PostgreSQL: they are used in the guard triggers' definitions.)
//
// Right behaviour: ALTER [COLUMN] … [SET DATA] TYPE of a guarded table's column is
// refused like the USING form whatever WithDDL says (ErrUnsupported), and the rows
// keep their values — or the design says why an implicit cast's rewrite is allowed
// when the USING rewrite is not.
func TestAlterColumnTypeRefusedThroughPool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := guardedWith(t, ctx, dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 0, 0)")
	fenced := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts")+"&fenced_allow=ddl")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1400000 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE under 40: %v", err)
	}
	// Control: the USING form is refused.
	if _, err := fenced.ExecContext(ctx, "ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(19,-6) USING balance"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control: TYPE … USING: %v; want ErrUnsupported", err)
	}
	for _, q := range []string{
		"ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(19,-6)",
		"ALTER TABLE accounts ALTER COLUMN balance TYPE bigint",
	} {
		if _, err := fenced.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the pool (fenced_allow=ddl): %v; want ErrUnsupported like TYPE … USING", q, err)
		}
	}
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if bal != 1_400_000 {
		t.Errorf("ALTER COLUMN balance TYPE … (no USING) through the fenced pool rewrote the balance written under token 40 from 1400000 to %d without a token or the row triggers; want it refused like TYPE … USING", bal)
	}
}

// TestMissingListedTableWritingDDLRefused (red-team rt36a F2, fail-open of the
// missing-table guard): while a listed table does not exist (fenced_tables=acounts, a
// typo for accounts) a pool with fenced_allow=ddl refuses every statement that may
// write rows (missing.go, plan.MayWriteRows), since the write may be meant for the
// table the typo left unguarded. MayWriteRows judges every DDL head as not writing,
// "whatever its body names", but PostgreSQL's CREATE TABLE … AS runs a top-level
// data-modifying WITH: `CREATE TABLE gone AS WITH d AS (DELETE FROM accounts
// RETURNING *) SELECT * FROM d` deletes every row of accounts, and a stale `UPDATE`
// in the WITH lands the same way. The plain DELETE is refused (control). So is the
// same CTAS on a guarded table ("DDL whose query writes a guarded table").
//
// Right behaviour: a DDL statement whose text holds a write (hasWriteIn: INSERT,
// UPDATE, DELETE, MERGE in a WITH) may write rows; while a listed table is missing it
// is refused with ErrSchema naming acounts, and accounts keeps its row.
func TestMissingListedTableWritingDDLRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "DELETE FROM accounts WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("control: DELETE while acounts is missing: %v; want ErrSchema", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "CREATE TABLE rt36a_gone AS WITH d AS (DELETE FROM accounts RETURNING *) SELECT * FROM d")
	var n int
	if qerr := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || n != 1 {
		t.Errorf("CREATE TABLE … AS WITH d AS (DELETE FROM accounts …) while the listed acounts is missing (fenced_allow=ddl): %v, %d row(s) left; want ErrSchema naming acounts, 1 row left", err, n)
	}
}
