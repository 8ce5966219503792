package mysql_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMissingListedTablePartitionTruncateRefused (red-team rt36a F3, fail-open of the
// missing-table guard): while a listed table does not exist (fenced_tables=acounts, a
// typo for accounts) a pool with fenced_allow=ddl refuses every statement that may
// write rows (missing.go, plan.MayWriteRows) — TRUNCATE accounts and DELETE FROM
// accounts are refused (controls). MayWriteRows judges every DDL head as not writing,
// but ALTER TABLE … TRUNCATE PARTITION (and DROP/EXCHANGE/CONVERT PARTITION, DISCARD
// TABLESPACE) removes rows exactly like TRUNCATE — the planner's own rowmove.go
// refuses them "like TRUNCATE" on a guarded table. Here it empties accounts through
// the pool.
//
// Right behaviour: the ALTER TABLE clauses rowmove.go lists (and PostgreSQL's DETACH
// PARTITION / TYPE … USING) may write rows; while a listed table is missing they are
// refused with ErrSchema naming acounts, and accounts keeps its row.
func TestMissingListedTablePartitionTruncateRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL+" PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN MAXVALUE)",
		`INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acounts&fenced_allow=ddl")
	for _, q := range []string{"TRUNCATE accounts", "DELETE FROM accounts WHERE id = 1"} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), q); !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("control: %s while acounts is missing: %v; want ErrSchema", q, err)
		}
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "ALTER TABLE accounts TRUNCATE PARTITION p0")
	var n int
	if qerr := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || n != 1 {
		t.Errorf("ALTER TABLE accounts TRUNCATE PARTITION p0 while the listed acounts is missing (fenced_allow=ddl): %v, %d row(s) left; want ErrSchema naming acounts, 1 row left", err, n)
	}
}

// TestMissingListedTableCompoundStatementRefused (red-team rt36a F4, fail-open of the
// missing-table guard): MayWriteRows splits the text at every ";" and judges the
// pieces; a MariaDB compound statement `BEGIN NOT ATOMIC …; END` is one statement, but
// its first piece has the quiet head BEGIN, so only INSERT/UPDATE/DELETE/MERGE/REPLACE
// words in it count: `BEGIN NOT ATOMIC TRUNCATE accounts; END` (or CALL p(), or
// EXECUTE IMMEDIATE 'DELETE …') is judged not to write. With fenced_allow=ddl,
// dynamic_sql (compound statements are dynamic SQL) and the listed acounts missing, it
// empties accounts, though TRUNCATE accounts alone is refused.
//
// Right behaviour: a compound statement (the planner already recognises `BEGIN NOT
// ATOMIC`) may write rows; refused with ErrSchema naming acounts, accounts keeps its
// row.
func TestMissingListedTableCompoundStatementRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acounts&fenced_allow=ddl,dynamic_sql")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "TRUNCATE accounts"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("control: TRUNCATE accounts while acounts is missing: %v; want ErrSchema", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "BEGIN NOT ATOMIC TRUNCATE accounts; END")
	var n int
	if qerr := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || n != 1 {
		t.Errorf("BEGIN NOT ATOMIC TRUNCATE accounts; END while the listed acounts is missing (fenced_allow=ddl,dynamic_sql): %v, %d row(s) left; want ErrSchema naming acounts, 1 row left", err, n)
	}
}

// TestModifyFenceColumnTypeRefused (red-team rt36a F1b, fail-open under
// WithDDL): the planner refuses PostgreSQL's ALTER COLUMN … TYPE … USING on a guarded
// table whatever WithDDL says, because it rewrites every row without the row triggers
// (commit 7f4b65c: "a fencing column set back to 0"). MariaDB's ALTER TABLE … MODIFY
// of a column rewrites every row the same way — and, unlike PostgreSQL, MariaDB lets
// it change a column the guard triggers use. `MODIFY fence_token FLOAT NOT NULL`
// rounds the token 100,000,001 (the last writer's) to 100,000,000 under the default
// STRICT_TRANS_TABLES, and `MODIFY fence_token BIGINT NOT NULL` restores the type the
// guard and the lazy check expect. Both pass through a pool with fenced_allow=ddl;
// afterwards the stale holder 100,000,000 (older than the row's writer) writes the row
// fenced and is accepted.
//
// Right behaviour: MODIFY/CHANGE [COLUMN] of a guarded table's fencing column (and,
// like TYPE … USING, arguably of any column) is refused whatever WithDDL says
// (ErrUnsupported); the stale write is refused with ErrFenced and the row keeps the
// fresh holder's balance.
func TestModifyFenceColumnTypeRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn, admin := tombstoneClockSetup(t, ctx)
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts")+"&fenced_allow=ddl")
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 100_000_001), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE under 100000001: %v", err)
	}
	for _, q := range []string{
		"ALTER TABLE accounts MODIFY fence_token FLOAT NOT NULL DEFAULT 0",
		"ALTER TABLE accounts MODIFY fence_token BIGINT NOT NULL DEFAULT 0",
	} {
		if _, err := fenced.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the pool (fenced_allow=ddl): %v; want ErrUnsupported (it rewrites every row's token without the row triggers)", q, err)
		}
	}
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 100_000_000), "UPDATE accounts SET balance = 666 WHERE id = 1")
	var bal, tok int64
	if qerr := admin.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrFenced) || bal != 1 {
		t.Errorf("stale UPDATE under 100000000 after the row was written under 100000001: %v, balance %d, token %d; want ErrFenced, balance 1", err, bal, tok)
	}
}

// TestAlterIgnoreRefusedThroughPool (red-team rt36a F6, fail-open under WithDDL):
// MariaDB's ALTER IGNORE TABLE deletes rows while it copies the table — the later rows
// that duplicate a new UNIQUE key (`ALTER IGNORE TABLE accounts ADD UNIQUE (balance)`),
// or the rows no partition of a new LIST/RANGE partitioning takes (`ALTER IGNORE TABLE
// accounts PARTITION BY LIST (id) (PARTITION p0 VALUES IN (1))`) — without the DELETE
// trigger, so without tombstones, exactly what TRUNCATE / DROP PARTITION do and what
// rowmove.go refuses whatever WithDDL says. rowmove.go skips IGNORE as a modifier and
// passes both. Through a pool with fenced_allow=ddl, key 2 (written under 40) is
// deleted with no tombstone, and the stale holder 30 then re-inserts it through the
// fenced pool: accepted.
//
// Right behaviour: ALTER IGNORE TABLE of a guarded table is refused like TRUNCATE
// (ErrUnsupported) — the IGNORE is what lets the server drop rows — and key 2 stays.
func TestAlterIgnoreRefusedThroughPool(t *testing.T) {
	for _, ddl := range []string{
		"ALTER IGNORE TABLE accounts ADD UNIQUE (balance)",
		"ALTER IGNORE TABLE accounts PARTITION BY LIST (id) (PARTITION p0 VALUES IN (1))",
	} {
		t.Run(ddl, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dsn, admin := tombstoneClockSetup(t, ctx)
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts")+"&fenced_allow=ddl")
			if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id IN (1, 2)"); err != nil {
				t.Fatalf("UPDATE under 40: %v", err)
			}
			_, err := fenced.ExecContext(ctx, ddl)
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s through the pool (fenced_allow=ddl): %v; want ErrUnsupported like TRUNCATE", ddl, err)
			}
			if err == nil {
				// The migration puts the table back as it was; the stale holder re-inserts key 2.
				// (one of the two applies)
				_, _ = admin.ExecContext(ctx, "ALTER TABLE accounts REMOVE PARTITIONING")
				_, _ = admin.ExecContext(ctx, "ALTER TABLE accounts DROP INDEX balance")
			}
			_, ierr := fenced.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO accounts (id, balance) VALUES (2, 666)")
			var n int
			if qerr := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE id = 2 AND balance = 666").Scan(&n); qerr != nil {
				t.Fatal(qerr)
			}
			if n != 0 {
				t.Errorf("after %s through the pool, the stale holder 30 re-inserted key 2 (written under 40): %v; want it fenced", ddl, ierr)
			}
		})
	}
}

// TestMissingListedTableSetStatementForRefused (red-team rt36a F7, fail-open of the
// missing-table guard): while a listed table does not exist (fenced_tables=acounts, a
// typo for accounts) a pool with fenced_allow=ddl refuses every statement that may
// write rows. MariaDB's `SET STATEMENT var=value FOR <statement>` runs <statement>, but
// MayWriteRows judges it as the quiet head SET and looks only for the write words in
// it — and an UPDATE right after FOR is skipped as a locking clause (FOR UPDATE). So
// the very stale write the guard exists for, `SET STATEMENT max_statement_time=100 FOR
// UPDATE accounts SET balance = 99 WHERE id = 1`, lands, while the plain UPDATE is
// refused (control). TRUNCATE, LOAD DATA, CALL, EXECUTE IMMEDIATE and ALTER … after FOR
// are missed the same way.
//
// Right behaviour: SET STATEMENT … FOR <statement> is judged as <statement> (the
// planner already finds it for guarded tables); the write is refused with ErrSchema
// naming acounts and the balance stays 1.
func TestMissingListedTableSetStatementForRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("control: UPDATE while acounts is missing: %v; want ErrSchema", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "SET STATEMENT max_statement_time=100 FOR UPDATE accounts SET balance = 99 WHERE id = 1")
	var b int64
	if qerr := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&b); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || b != 1 {
		t.Errorf("SET STATEMENT … FOR UPDATE accounts … while the listed acounts is missing (fenced_allow=ddl): %v, balance now %d; want ErrSchema naming acounts, balance 1", err, b)
	}
}
