package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneSetSchemaFixKeepsTombstones (red-team rt31a F3, was fail-open). Key 1
// of accounts is deleted under token 70 (tombstone 1:70 in
// public.fencedsql_tomb_accounts); ALTER TABLE accounts SET SCHEMA moves the table, and
// its tombstone triggers, still calling public.fencedsql_tombstone_accounts(), with it.
// schema.Check on moved.accounts reports the tombstone guard missing; its Fix installs
// moved's own function over moved.fencedsql_tomb_accounts and must carry the old
// schema's tombstones over (the old function has the same name in another schema: it is
// told apart by OID), so that a stale holder (token 65) cannot re-insert key 1.
func TestTombstoneSetSchemaFixKeepsTombstones(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t, "CREATE SCHEMA moved")
	old := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	if _, err := old.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	old.Close()
	testdb.Exec(t, raw, "ALTER TABLE accounts SET SCHEMA moved")
	var r schema.TableReport
	for i := 0; i < 3; i++ {
		reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "moved.accounts"})
		if err != nil {
			t.Fatal(err)
		}
		if r = reps[0]; r.OK() {
			break
		}
		testdb.Exec(t, raw, r.Fix...)
	}
	if !r.OK() {
		t.Fatalf("schema.Check on moved.accounts after its Fix: %q", r.Problems)
	}
	var moved int64
	if err := raw.QueryRowContext(ctx, "SELECT coalesce(max(fence_token), 0) FROM moved.fencedsql_tomb_accounts WHERE id = 1").Scan(&moved); err != nil || moved != 70 {
		t.Fatalf("moved.fencedsql_tomb_accounts keeps key 1 at token %d (%v), want 70 carried over", moved, err)
	}
	fenced := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=moved.accounts")
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO moved.accounts (id, balance) VALUES (1, 666)")
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM moved.accounts WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("the stale INSERT of key 1 under token 65 after the schema move returned %v (%d rows); want ErrFenced and no row", err, n)
	}
}

// renameFixRace renames accounts to ledger2 and runs fix (schema.Check's Fix for
// ledger2, or schema.TombstoneFix's statements alone) in one transaction of isolation
// iso while a newer holder (token 70) deletes key 1 of ledger2 by the protocol (stamp,
// DELETE) on a plain connection, its transaction open when the Fix starts and committed
// while the Fix waits. It returns the Fix's error and what a stale plain INSERT of key
// 1 under token 65 then gets, with the number of rows of key 1 after it.
func renameFixRace(t *testing.T, iso sql.IsolationLevel, tombOnly bool) (fixErr, staleErr error, n int) {
	ctx, _, raw := guardedAccounts(t)
	raw.SetMaxOpenConns(4)
	testdb.Exec(t, raw, "ALTER TABLE accounts RENAME TO ledger2")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "ledger2"})
	if err != nil {
		t.Fatal(err)
	}
	fix := reps[0].Fix
	if tombOnly {
		if fix, err = schema.TombstoneFix(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "ledger2"}); err != nil {
			t.Fatal(err)
		}
	}
	n70, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n70.Rollback()
	testdbTxExec(t, ctx, n70, "UPDATE ledger2 SET fence_token = 70, version = version + 1 WHERE id = 1", "DELETE FROM ledger2 WHERE id = 1")
	done := make(chan error, 1)
	go func() {
		tx, err := raw.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
		if err != nil {
			done <- err
			return
		}
		defer tx.Rollback()
		for i, s := range fix {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				done <- fmt.Errorf("fix statement %d: %w", i, err)
				return
			}
		}
		done <- tx.Commit()
	}()
	select {
	case err := <-done:
		t.Fatalf("the Fix ended before the DELETE committed (%v): it must wait for the table's writers", err)
	case <-time.After(400 * time.Millisecond):
	}
	if err := n70.Commit(); err != nil {
		t.Fatal(err)
	}
	fixErr = <-done
	_, staleErr = raw.ExecContext(ctx, "INSERT INTO ledger2 (id, balance, fence_token, version) VALUES (1, 666, 65, 1)")
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM ledger2 WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return fixErr, staleErr, n
}

func testdbTxExec(t *testing.T, ctx context.Context, tx *sql.Tx, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// requireTombRefusal fails t unless err is the tombstone guard's refusal (23502 on the
// token column) and no row of key 1 came back.
func requireTombRefusal(t *testing.T, err error, n int, what string) {
	t.Helper()
	var pe *pgconn.PgError
	if n != 0 || !errors.As(err, &pe) || pe.Code != "23502" || !strings.Contains(pe.Message, "tombstone") {
		t.Fatalf("%s: the stale INSERT of key 1 under token 65 returned %v and %d rows of key 1 exist; want the tombstone refusal", what, err, n)
	}
}

// TestTombstoneRenameFixRefusesCarryOverUnderRepeatableRead (red-team rt31a F4, was
// fail-open). Under REPEATABLE READ (an installer whose default_transaction_isolation
// is repeatable read) the Fix's snapshot is taken by its first statement, before a
// DELETE of the renamed table that commits while the Fix waits for its lock: a merge
// with that snapshot would miss the DELETE's tombstone. The carry-over refuses to run
// there (SQLSTATE 55000, nothing installed: the old triggers stay and refuse the stale
// INSERT).
func TestTombstoneRenameFixRefusesCarryOverUnderRepeatableRead(t *testing.T) {
	fixErr, err, n := renameFixRace(t, sql.LevelRepeatableRead, false)
	var pe *pgconn.PgError
	if !errors.As(fixErr, &pe) || pe.Code != "55000" || !strings.Contains(pe.Message, "READ COMMITTED") {
		t.Fatalf("the Fix under REPEATABLE READ returned %v; want the carry-over's refusal (55000, run it in READ COMMITTED)", fixErr)
	}
	requireTombRefusal(t, err, n, "after the refused Fix")
}

// TestTombstoneRenameFixCarriesConcurrentDelete (red-team rt31a F4): the same race
// under READ COMMITTED, with schema.Check's whole Fix and with schema.TombstoneFix's
// statements alone (nothing before them locks the table: TombstoneDDL's own LOCK
// TABLE makes the merge wait for the DELETE and see its tombstone), and under READ
// UNCOMMITTED, which PostgreSQL runs as READ COMMITTED (red-team rt58b: the carry-over
// refused it as a snapshot level).
func TestTombstoneRenameFixCarriesConcurrentDelete(t *testing.T) {
	for _, c := range []struct {
		iso      sql.IsolationLevel
		tombOnly bool
	}{{sql.LevelReadCommitted, false}, {sql.LevelReadCommitted, true}, {sql.LevelReadUncommitted, false}} {
		t.Run(fmt.Sprintf("%v/tombstoneFixOnly=%v", c.iso, c.tombOnly), func(t *testing.T) {
			fixErr, err, n := renameFixRace(t, c.iso, c.tombOnly)
			if fixErr != nil {
				t.Fatalf("the Fix under %v: %v", c.iso, fixErr)
			}
			requireTombRefusal(t, err, n, "after the Fix")
		})
	}
}
