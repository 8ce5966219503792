package postgres_test

// Interrupted operations on PostgreSQL (kept from red-team rt56c): the generator of
// internal/fencetest (interrupted.go: the blockers, the caller's modes, the oracle)
// with PostgreSQL's interruptions — pg_cancel_backend, pg_terminate_backend,
// lock_timeout, statement_timeout, a deadlock the blocker provokes, and
// idle_in_transaction_session_timeout between the caller's statements — and an
// interrupted COMMIT (TestInterruptedDeferredCommit).
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged with
// its replay line (the draws replay, not the moment the interruption lands);
// FENCEDSQL_SCHEDULES_ITERS=n runs n trials with no time limit; FENCEDSQL_SCHEDULES_LOG=1
// logs every interrupted trial. The long form is in TestInterruptedOperationsGenerated's
// doc comment.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// interruptBudget bounds the default run (after the guard's installation, about 2 s),
// so that the test takes about 10 s on two loaded cores.
const interruptBudget = 7 * time.Second

// interruptEnv is a guarded accounts table and a one-connection fenced pool per
// interruption kind. Each trial's rows are new keys (base) written under new tokens
// (tokBase): a deleted key stays tombstoned, so the rows are never reused.
type interruptEnv struct {
	fencetest.InterruptSetup
	base, tokBase int64
}

func openInterruptEnv(t *testing.T) *interruptEnv {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	fencetest.Guard(t, context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	base := fencetest.WithParam(dsn, "fenced_tables=accounts")
	e := &interruptEnv{}
	pools := map[string]*sql.DB{}
	for kind, extra := range map[string]string{
		"cancel":      "lock_timeout=5000",
		"terminate":   "lock_timeout=5000",
		"deadlock":    "lock_timeout=5000",
		"locktimeout": "lock_timeout=300",
		"stmttimeout": "statement_timeout=400",
		"idletx":      "idle_in_transaction_session_timeout=150&lock_timeout=2000",
	} {
		p := testdb.Open(t, "fenced-pgx", fencetest.WithParam(base, extra))
		p.SetMaxOpenConns(1)
		pools[kind] = p
	}
	e.InterruptSetup = fencetest.InterruptSetup{
		Raw:     raw,
		Pools:   pools,
		Kinds:   []string{"cancel", "terminate", "deadlock", "locktimeout", "stmttimeout", "idletx"},
		RefKind: "cancel",
		Ops: []fencetest.InterruptOp{
			{Name: "delete", Query: "DELETE FROM accounts WHERE id = #1"},
			{Name: "delete2", Query: "DELETE FROM accounts WHERE id IN (#1, #2)"},
			{Name: "deleteSub", Query: interruptDeleteSub},
			{Name: "deleteReturning", Query: "DELETE FROM accounts WHERE id = #1 RETURNING id", Read: true},
			{Name: "update", Query: "UPDATE accounts SET balance = balance + 1 WHERE id = #2"},
			{Name: "upsert", Query: "INSERT INTO accounts (id, balance) VALUES (#2, 5) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance"},
			{Name: "upsertNew", Query: "INSERT INTO accounts (id, balance) VALUES (#9, 5) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance"},
			{Name: "insert", Query: "INSERT INTO accounts (id, balance) VALUES (#7, 1)"},
			{Name: "claim", Query: "SELECT id, balance FROM accounts WHERE id = #2 FOR UPDATE", Read: true},
			{Name: "claimAbsent", Query: "SELECT id, balance FROM accounts WHERE id = #9 FOR UPDATE", Read: true},
			{Name: "claimRange", Query: "SELECT id, (SELECT 1) AS one FROM accounts WHERE id IN (#1, #2) ORDER BY id LIMIT 2 FOR UPDATE", Read: true},
		},
		Prelude:      "UPDATE accounts SET balance = balance + 7 WHERE id = #4",
		Cont:         interruptCont,
		DeadlockLock: "SELECT id FROM accounts WHERE id = #4 FOR UPDATE",
		Blockers: map[string][]string{
			"none":     nil,
			"rows12":   {"SELECT id FROM accounts WHERE id IN (#1, #2) FOR UPDATE"},
			"row2":     {"SELECT id FROM accounts WHERE id = #2 FOR NO KEY UPDATE"},
			"tomb":     {"LOCK TABLE fencedsql_tomb_accounts IN SHARE MODE"},
			"pending9": {"INSERT INTO accounts (id, balance) VALUES (#9, 1)"},
			"pending7": {"INSERT INTO accounts (id, balance) VALUES (#7, 1)"},
			"row3":     {"SELECT id FROM accounts WHERE id = #3 FOR UPDATE"},
		},
		SessionID:        "SELECT pg_backend_pid()",
		BlockedQuery:     "SELECT COALESCE(bool_or(wait_event_type = 'Lock'), false) FROM pg_stat_activity WHERE pid = $1",
		Kill:             map[string]string{"cancel": "SELECT pg_cancel_backend(%d)", "terminate": "SELECT pg_terminate_backend(%d)"},
		Pause:            map[string]time.Duration{"idletx": 250 * time.Millisecond},
		Reset:            e.reset,
		SavepointKeepsTx: true,
		IDs:              func(q string) string { return fencetest.InterruptIDs(q, e.base) },
		Token:            func() uint64 { return uint64(e.tokBase + 20) },
		Snap:             e.snap,
		InsertPool:       testdb.Open(t, "fenced-pgx", base),
		InsertToken:      func() uint64 { return uint64(e.tokBase + 5) },
	}
	return e
}

// interruptDeleteSub is a DELETE the wrapper sends as two statements (a fencing
// UPDATE, then the DELETE of the rows it stamped); interruptCont is the caller's next
// write.
const (
	interruptDeleteSub = "DELETE FROM accounts WHERE id IN (SELECT id FROM accounts WHERE balance = 100 AND id > #0 AND id < #3)"
	interruptCont      = "UPDATE accounts SET balance = balance + 1000 WHERE id = #3"
)

// reset moves to new keys and tokens and inserts rows #1 to #4 (balance 100, token 10).
func (e *interruptEnv) reset(t *testing.T) {
	t.Helper()
	e.base, e.tokBase = e.base+100, e.tokBase+1000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.InsertPool.ExecContext(fencedsql.WithToken(ctx, uint64(e.tokBase+10)),
		e.IDs("INSERT INTO accounts (id, balance) VALUES (#1, 100), (#2, 100), (#3, 100), (#4, 100)")); err != nil {
		t.Fatalf("reset: %v", err)
	}
}

// snap is the trial's rows and tombstones, keys and tokens relative to the trial's.
func (e *interruptEnv) snap(t *testing.T) string {
	t.Helper()
	return fencetest.InterruptSnapshot(t, e.Raw,
		"SELECT id - $1, balance, fence_token - $2, version FROM accounts WHERE id > $1 AND id <= $1 + 99 ORDER BY id",
		"SELECT id - $1, fence_token - $2 FROM fencedsql_tomb_accounts WHERE id > $1 AND id <= $1 + 99 ORDER BY id",
		e.base, e.tokBase)
}

// TestInterruptedOperationsGenerated: the generator (the file's leading comment). CI
// form: a time-based seed, trials for interruptBudget. Long form (the red-team sweep,
// about 1,100 trials; any seed, or a logged one to replay):
//
//	source /tmp/fsql_env.sh && FENCEDSQL_SCHEDULES_ITERS=1000 \
//	  go test -timeout 60m -count=1 -run '^TestInterruptedOperationsGenerated$' ./dialects/postgres/
func TestInterruptedOperationsGenerated(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 1<<30)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<trials run> go test -run '^TestInterruptedOperationsGenerated$' ./dialects/postgres/)", k.Seed, k.Seed)
	e := openInterruptEnv(t)
	fencetest.RunInterruptedOperations(t, &e.InterruptSetup, k, interruptBudget)
}

// TestInterruptedDeferredCommit: COMMIT itself blocks (a DEFERRABLE INITIALLY DEFERRED
// unique constraint waits at COMMIT for a concurrent transaction's uncommitted INSERT
// of the same value) and is interrupted there: pg_cancel_backend (57014),
// pg_terminate_backend (57P01), or the other transaction commits (23505 at COMMIT).
// Commit must fail with an outcome other than Committed (the unique violation:
// ErrDuplicate, NotCommitted), not ErrFenced or ErrSchema, and nothing of the
// transaction may be in the table. statement_timeout is not tried:
// PostgreSQL disables it before COMMIT's deferred checks, only the caller's context
// bounds them.
func TestInterruptedDeferredCommit(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, email TEXT, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
			CONSTRAINT accounts_email UNIQUE (email) DEFERRABLE INITIALLY DEFERRED)`)
	fencetest.Guard(t, context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	base := fencetest.WithParam(dsn, "fenced_tables=accounts")
	other := testdb.Open(t, "fenced-pgx", base)
	id := int64(0)
	for _, kind := range []string{"cancel", "terminate", "othercommit"} {
		pool := testdb.Open(t, "fenced-pgx", base)
		pool.SetMaxOpenConns(1)
		for _, op := range []string{"insert", "upsert", "update"} {
			id += 10
			t.Run(kind+"/"+op, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				email, tok := fmt.Sprintf("e%d", id), uint64(1000+id)
				if _, err := other.ExecContext(fencedsql.WithToken(ctx, tok), fmt.Sprintf("INSERT INTO accounts (id, email, balance) VALUES (%d, 'seed%d', 1)", id+5, id)); err != nil {
					t.Fatal(err)
				}
				var pid int
				if err := pool.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
					// the previous subtest terminated the connection: the pool opens another
					if err := pool.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
						t.Fatal(err)
					}
				}
				blocker, err := other.BeginTx(fencedsql.WithToken(ctx, tok), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer blocker.Rollback()
				if _, err := blocker.ExecContext(ctx, fmt.Sprintf("INSERT INTO accounts (id, email, balance) VALUES (%d, '%s', 1)", id+1, email)); err != nil {
					t.Fatal(err)
				}
				tx, err := pool.BeginTx(fencedsql.WithToken(ctx, tok+1), nil)
				if err != nil {
					t.Fatal(err)
				}
				q := map[string]string{
					"insert": fmt.Sprintf("INSERT INTO accounts (id, email, balance) VALUES (%d, '%s', 1)", id+2, email),
					"upsert": fmt.Sprintf("INSERT INTO accounts (id, email, balance) VALUES (%d, '%s', 1) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + 1", id+2, email),
					"update": fmt.Sprintf("UPDATE accounts SET email = '%s', balance = balance + 1 WHERE id = %d", email, id+5),
				}[op]
				if _, err := tx.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- tx.Commit() }()
				// wait for COMMIT to block on the other INSERT
				for i := 0; i < 500; i++ {
					var blocked bool
					_ = raw.QueryRowContext(ctx, "SELECT COALESCE(bool_or(wait_event_type = 'Lock'), false) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&blocked)
					if blocked {
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
				switch kind {
				case "cancel":
					_, _ = raw.ExecContext(ctx, "SELECT pg_cancel_backend($1)", pid)
				case "terminate":
					_, _ = raw.ExecContext(ctx, "SELECT pg_terminate_backend($1)", pid)
				case "othercommit":
					if err := blocker.Commit(); err != nil {
						t.Fatal(err)
					}
				}
				cerr := <-done
				_ = blocker.Rollback()
				var n int
				if err := raw.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM accounts WHERE id = %d OR (id = %d AND email IS NOT NULL AND email <> 'seed%d')", id+2, id+5, id)).Scan(&n); err != nil {
					t.Fatal(err)
				}
				switch {
				case cerr == nil:
					t.Errorf("the interrupted COMMIT reported success")
				case n != 0:
					t.Errorf("Commit failed (%s: %v) but the transaction's row is committed", fencedsql.CommitOutcome(cerr), cerr)
				case fencedsql.CommitOutcome(cerr) == fencedsql.Committed || fencetest.BadInterruptErr(cerr):
					t.Errorf("wrong error for an interrupted COMMIT (%s): %v", fencedsql.CommitOutcome(cerr), cerr)
				case kind == "othercommit" && (!errors.Is(cerr, fencedsql.ErrDuplicate) || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted):
					t.Errorf("COMMIT's unique violation: want ErrDuplicate, NotCommitted; got (%s) %v", fencedsql.CommitOutcome(cerr), cerr)
				}
			})
		}
	}
}
