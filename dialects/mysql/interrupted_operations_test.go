package mysql_test

// Interrupted operations on MariaDB (kept from red-team rt56c): the generator of
// internal/fencetest (interrupted.go: the blockers, the caller's modes, the oracle)
// with MariaDB's interruptions — KILL QUERY and KILL CONNECTION from a raw
// connection, innodb_lock_wait_timeout = 1 with innodb_rollback_on_timeout OFF (only
// the statement is rolled back), max_statement_time, and a deadlock the blocker
// provokes. The statement really runs and is interrupted inside the server: a CALL of
// the absence recorder stops after its tombstone INSERT, a trigger's INSERT waits, …
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged with
// its replay line (the draws replay, not the moment the interruption lands);
// FENCEDSQL_SCHEDULES_ITERS=n runs n trials with no time limit; FENCEDSQL_SCHEDULES_LOG=1
// logs every interrupted trial. The long form is in TestInterruptedOperationsGenerated's
// doc comment.

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// interruptBudget bounds the default run (after the guard's installation, about 4 s),
// so that the test takes about 10 s on two loaded cores.
const interruptBudget = 5 * time.Second

// TestInterruptedOperationsGenerated: the generator (the file's leading comment). CI
// form: a time-based seed, trials for interruptBudget. Long form (the red-team sweep,
// about 1,850 trials; any seed, or a logged one to replay):
//
//	source /tmp/fsql_env.sh && FENCEDSQL_SCHEDULES_ITERS=1500 \
//	  go test -timeout 60m -count=1 -run '^TestInterruptedOperationsGenerated$' ./dialects/mysql/
func TestInterruptedOperationsGenerated(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 1<<30)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<trials run> go test -run '^TestInterruptedOperationsGenerated$' ./dialects/mysql/)", k.Seed, k.Seed)
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", fencetest.WithParam(dsn, "lock_wait_timeout=10"),
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`)
	fencetest.Guard(t, context.Background(), raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	raw.SetMaxOpenConns(8)
	base := fencetest.WithParam(fencetest.WithParam(dsn, "fenced_tables=accounts"), "interpolateParams=true")
	pools := map[string]*sql.DB{}
	for kind, extra := range map[string]string{
		"killquery": "innodb_lock_wait_timeout=2",
		"killconn":  "innodb_lock_wait_timeout=2",
		"lockwait":  "innodb_lock_wait_timeout=1",
		"stmttime":  "max_statement_time=0.4",
		"deadlock":  "innodb_lock_wait_timeout=2",
	} {
		p := testdb.Open(t, "fenced-mysql", fencetest.WithParam(base, extra))
		p.SetMaxOpenConns(1)
		pools[kind] = p
	}
	s := &fencetest.InterruptSetup{
		Raw:     raw,
		Pools:   pools,
		Kinds:   []string{"killquery", "killconn", "lockwait", "stmttime", "deadlock"},
		RefKind: "killquery",
		Ops: []fencetest.InterruptOp{
			{Name: "delete", Query: "DELETE FROM accounts WHERE id = 1"},
			{Name: "delete2", Query: "DELETE FROM accounts WHERE id IN (1, 2)"},
			{Name: "deleteRange", Query: "DELETE FROM accounts WHERE balance = 100 AND id < 3 ORDER BY id LIMIT 2"},
			{Name: "update", Query: "UPDATE accounts SET balance = balance + 1 WHERE id = 2"},
			{Name: "upsert", Query: "INSERT INTO accounts (id, balance) VALUES (2, 5) ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)"},
			{Name: "insert", Query: "INSERT INTO accounts (id, balance) VALUES (7, 1)"},
			{Name: "claim", Query: "SELECT id, balance FROM accounts WHERE id = 2 FOR UPDATE", Read: true},
			{Name: "claimAbsent", Query: "SELECT id, balance FROM accounts WHERE id = 9 FOR UPDATE", Read: true},
			{Name: "claimRange", Query: "SELECT id FROM accounts WHERE id IN (1, 2) ORDER BY id LIMIT 2 FOR UPDATE", Read: true},
		},
		Prelude:      "UPDATE accounts SET balance = balance + 7 WHERE id = 4",
		Cont:         "UPDATE accounts SET balance = balance + 1000 WHERE id = 3",
		DeadlockLock: "SELECT id FROM accounts WHERE id = 4 FOR UPDATE",
		// the raw blocker's uncommitted INSERTs hold the keys the caller inserts or claims
		Blockers: map[string][]string{
			"none":     nil,
			"rows12":   {"SELECT id FROM accounts FORCE INDEX (PRIMARY) WHERE id IN (1, 2) FOR UPDATE"},
			"row2":     {"SELECT id FROM accounts FORCE INDEX (PRIMARY) WHERE id = 2 FOR UPDATE"},
			"tomb":     {"SELECT * FROM fencedsql_tomb_accounts FOR UPDATE"},
			"pending9": {"INSERT INTO accounts VALUES (9, 1, 30, 1)"},
			"pending7": {"INSERT INTO accounts VALUES (7, 1, 30, 1)"},
			"row3":     {"SELECT id FROM accounts FORCE INDEX (PRIMARY) WHERE id = 3 FOR UPDATE"},
			"gapall":   {"SELECT id FROM accounts FORCE INDEX (PRIMARY) WHERE id BETWEEN 5 AND 100 FOR UPDATE"},
		},
		SessionID: "SELECT CONNECTION_ID()",
		// a statement on this small table that runs for 50 ms waits for a lock
		// (information_schema.INNODB_TRX does not list every waiting transaction on
		// MariaDB 10.11: a caller's next write waiting for a row lock was missing)
		BlockedQuery: "SELECT COUNT(*) > 0 FROM information_schema.PROCESSLIST WHERE ID = ? AND COMMAND = 'Query' AND TIME_MS > 50",
		Kill:         map[string]string{"killquery": "KILL QUERY %d", "killconn": "KILL CONNECTION %d"},
		// every trial on the same keys: the raw connection deletes the rows and tombstones
		Reset: func(t *testing.T) {
			testdb.Exec(t, raw, "DELETE FROM accounts", "DELETE FROM fencedsql_tomb_accounts",
				"INSERT INTO accounts VALUES (1, 100, 10, 1), (2, 100, 10, 1), (3, 100, 10, 1), (4, 100, 10, 1)")
		},
		IDs:   func(q string) string { return q },
		Token: func() uint64 { return 20 },
		Snap: func(t *testing.T) string {
			return fencetest.InterruptSnapshot(t, raw,
				"SELECT id, balance, fence_token, version FROM accounts ORDER BY id",
				"SELECT id, fence_token FROM fencedsql_tomb_accounts ORDER BY id")
		},
	}
	fencetest.RunInterruptedOperations(t, s, k, interruptBudget)
}
