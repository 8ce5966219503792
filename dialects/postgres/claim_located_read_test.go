package postgres_test

// Red-team rt19c: the counted rows of a two-statement claim on PostgreSQL.

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func locatedReadOpen(t *testing.T, setup ...string) (raw, fenced *sql.DB) {
	dsn := testdb.Postgres(t)
	return testdb.Open(t, "pgx", dsn, setup...), testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
}

// TestTwoStatementClaimReadsOnlyStampedRows (fail-open). On PostgreSQL a claim without ORDER
// BY/LIMIT/OFFSET/NOWAIT that runs as two statements — here because the table has an
// ordinary AFTER UPDATE trigger (an audit log: ClaimOneQuery then says no), the same
// for a subquery or any function outside the short list in the select list — reads
// its rows restricted by the token only (`… WHERE (<caller's>) AND fence_token = $1`),
// not by the ctids its fencing UPDATE stamped (the located form the ORDER BY/LIMIT
// claim and the DELETE use). Row 3 carries token 10 from an earlier claim of the same
// holder. The fencing UPDATE stamps rows 1 and 2; a trigger moves row 2 out of the
// selection and row 3 into it. The read returns rows 1 and 3: same count (2 == 2), so
// the count check passes and Commit succeeds — the caller read FOR UPDATE row 3, which
// this claim did not stamp, and never saw row 2, which it did. docs/design.md says
// "the read is restricted to the rows this claim stamped" on PostgreSQL. Right
// behaviour: restrict the read to the stamped ctids (fencedsql.claimed) as the located
// claim does, or refuse; never return row 3 with a passed count.
func TestTwoStatementClaimReadsOnlyStampedRows(t *testing.T) {
	raw, fenced := locatedReadOpen(t,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, state TEXT NOT NULL, tags INT[] NOT NULL DEFAULT '{}',
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE audit (id BIGINT, at timestamptz DEFAULT now())`,
		// Claiming row 2 moves it out of the free slots (BEFORE) and hands its slot to row 3
		// (AFTER, with the audit record).
		`CREATE FUNCTION rt19c_move() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF NEW.id = 2 AND NEW.state = 'free' THEN NEW.state := 'moved'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER rt19c_move BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION rt19c_move()`,
		`CREATE FUNCTION rt19c_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			INSERT INTO audit (id) VALUES (NEW.id);
			IF NEW.id = 2 AND OLD.state = 'free' THEN UPDATE accounts SET state = 'free' WHERE id = 3; END IF;
			RETURN NULL; END $$`,
		`CREATE TRIGGER rt19c_audit AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION rt19c_audit()`,
		`INSERT INTO accounts (id, state, fence_token, version) VALUES (1, 'free', 0, 0), (2, 'free', 0, 0), (3, 'taken', 10, 1)`)
	ctx, tx := locatedReadTokenTx(t, fenced)
	got, readErr := claimFreeRows(t, ctx, tx)
	commitErr := tx.Commit()
	requireNoSwap(t, ctx, raw, got, readErr, commitErr)
}

// TestTwoStatementClaimReadsOnlyStampedRowsConcurrent (fail-open): the same swap without a
// trigger writing its own table. A BEFORE UPDATE trigger marks row 2 'claimed' when it is
// updated while free (it sleeps 0.5 s, as a lock wait would), so the claimed row 2
// leaves `state = 'free'`; meanwhile another session re-queues row 3 (state 'free'),
// which the same holder (token 10) claimed and released earlier, and commits. Under
// READ COMMITTED the second statement sees row 3: the token-only read returns rows 1
// and 3 for the rows 1 and 2 stamped — 2 == 2 — and Commit succeeds. The table has an
// audit AFTER UPDATE trigger, so the claim runs as two statements. Right behaviour: the
// read returns only the rows this claim stamped (here: the count then fails, 1 != 2,
// and the transaction rolls back), never row 3.
func TestTwoStatementClaimReadsOnlyStampedRowsConcurrent(t *testing.T) {
	raw, fenced := locatedReadOpen(t,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, state TEXT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE audit (id BIGINT, at timestamptz DEFAULT now())`,
		`CREATE FUNCTION rt19c_mark() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF NEW.id = 2 AND OLD.state = 'free' THEN PERFORM pg_sleep(0.5); NEW.state := 'claimed'; END IF;
			RETURN NEW; END $$`,
		`CREATE TRIGGER rt19c_mark BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION rt19c_mark()`,
		`CREATE FUNCTION rt19c_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit (id) VALUES (NEW.id); RETURN NULL; END $$`,
		`CREATE TRIGGER rt19c_audit AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION rt19c_audit()`,
		`INSERT INTO accounts (id, state, fence_token, version) VALUES (1, 'free', 0, 0), (2, 'free', 0, 0), (3, 'done', 10, 1)`)
	ctx, tx := locatedReadTokenTx(t, fenced)
	requeued := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, err := raw.ExecContext(ctx, `UPDATE accounts SET state = 'free' WHERE id = 3`)
		requeued <- err
	}()
	got, readErr := claimFreeRows(t, ctx, tx)
	commitErr := tx.Commit()
	if err := <-requeued; err != nil {
		t.Fatal(err)
	}
	requireNoSwap(t, ctx, raw, got, readErr, commitErr)
}

// claimFreeRows runs the claim of the free rows in tx and returns the ids it read.
func claimFreeRows(t *testing.T, ctx context.Context, tx *sql.Tx) ([]int64, error) {
	t.Helper()
	rs, err := tx.QueryContext(ctx, `SELECT id, state FROM accounts WHERE state = 'free' FOR UPDATE`)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	defer rs.Close()
	var got []int64
	for rs.Next() {
		var id int64
		var st string
		if err := rs.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	return got, rs.Err()
}

// requireNoSwap fails when a claim that read and committed without error returned row 3,
// which its fencing UPDATE did not stamp, in place of row 2, which it did.
func requireNoSwap(t *testing.T, ctx context.Context, raw *sql.DB, got []int64, readErr, commitErr error) {
	t.Helper()
	var v2, v3 int64
	if err := raw.QueryRowContext(ctx, `SELECT (SELECT version FROM accounts WHERE id = 2), (SELECT version FROM accounts WHERE id = 3)`).Scan(&v2, &v3); err != nil {
		t.Fatal(err)
	}
	t.Logf("read %v readErr %v commitErr %v; versions after: row2 %d row3 %d", got, readErr, commitErr, v2, v3)
	if readErr == nil && commitErr == nil && slices.Contains(got, 3) {
		t.Errorf("FAIL-OPEN: the claim returned row 3 (not stamped by its fencing UPDATE: version %d) and not row 2 (stamped: version %d); the count matched and Commit succeeded", v3, v2)
	}
}

// locatedReadTokenTx begins a transaction bound to token 10 on fenced, with a context for
// its statements.
func locatedReadTokenTx(t *testing.T, fenced *sql.DB) (context.Context, *sql.Tx) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() }) //nolint:errcheck
	return ctx, tx
}
