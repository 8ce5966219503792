package mysql_test

// A fault at each statement the wrapper sends for one caller operation (MariaDB; kept
// from red-team rt53a, no finding). internal/faultdriver sits between the wrapper and
// go-sql-driver/mysql and puts one fault at the k-th statement: the operation's inner
// statements (the two-statement DELETE's stamp and delete, keyed or listed past 256
// rows, the claims' UPDATE and locking read, the absence recorder's CALL), the session
// and lazy checks, the caller's next write, COMMIT. The MariaDB faults are modelled
// client-side, the statement not sent and the error packet returned (InnoDB undoes a
// failed statement whole, so the server is as it would be): a lock wait timeout (1205,
// the transaction lives on: innodb_rollback_on_timeout OFF), a deadlock (1213, a real
// ROLLBACK sent first, as InnoDB rolls back), a duplicate key (1062), a CHECK (4025),
// KILL QUERY (1317), max_statement_time (1969), KILL CONNECTION (1927, connection
// closed); and the shared kinds: a context that ended, driver.ErrBadConn, a reply lost
// after the statement ran. The caller ignores the error, runs another write and
// commits. The checker (internal/faultdriver/sweep.go) compares the committed table and
// its tombstones with reference runs without a fault; a table with the database-side
// guard and one without.
//
// Knobs (environment; the default fits CI: about 5 s per test):
//
//	FENCEDSQL_SCHEDULES_SEED=n   replay: trial i draws its set-up, operation, kind and
//	                             position from seed n+i (the default is time-based; a
//	                             failure of trial i prints SEED=n ITERS=i+1, the run up
//	                             to it: the trials share the pools)
//	FENCEDSQL_SCHEDULES_ITERS=n  trials to run (default: as many as fit in
//	                             faultdriver.DefaultBudget, 5 s; with ITERS set, no
//	                             time limit)
//	FENCEDSQL_SCHEDULES_LOG=1    log every trial's statements, not only a failing one's
//	FENCEDSQL_LONG=1             the full sweep: every set-up × operation × kind ×
//	                             position (2.5 to 4.5 minutes for the three tests,
//	                             as loaded as the machine is)
//
// The long form: FENCEDSQL_LONG=1 go test -timeout 0 -count=1 -run
// 'TestFaultAtEachInnerStatement|TestFaultInsideLazyCheck' ./dialects/mysql/

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/faultdriver"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// faultPacket returns MariaDB's error packet number n in place of the statement.
func faultPacket(n uint16, state, msg string) faultdriver.Inject {
	return func(*faultdriver.Conn, string) error {
		e := &gomysql.MySQLError{Number: n, Message: msg}
		copy(e.SQLState[:], state)
		return e
	}
}

// faultDriver is go-sql-driver/mysql under the fault driver with MariaDB's kinds.
func faultDriver() *faultdriver.Driver {
	deadlock := faultPacket(1213, "40001", "Deadlock found when trying to get lock; try restarting transaction")
	killed := faultPacket(1927, "70100", "Connection was killed")
	return &faultdriver.Driver{Base: &gomysql.MySQLDriver{}, LostErr: gomysql.ErrInvalidConn, Kinds: map[string]faultdriver.Inject{
		"timeout": faultPacket(1205, "HY000", "Lock wait timeout exceeded; try restarting transaction"),
		"deadlock": func(c *faultdriver.Conn, q string) error {
			_ = c.ExecRaw("ROLLBACK") // InnoDB rolls the transaction back
			return deadlock(c, q)
		},
		"dup":       faultPacket(1062, "23000", "Duplicate entry '42' for key 'PRIMARY'"),
		"check":     faultPacket(4025, "23000", "CONSTRAINT `c` failed for `db`.`accounts`"),
		"killquery": faultPacket(1317, "70100", "Query execution was interrupted"),
		"stmttime":  faultPacket(1969, "70100", "Query execution was interrupted (max_statement_time exceeded)"),
		"killconn": func(c *faultdriver.Conn, q string) error {
			c.Kill()
			return killed(c, q)
		},
	}}
}

var faultKinds = []string{"timeout", "deadlock", "dup", "check", "killquery", "stmttime", "killconn",
	faultdriver.KindCancel, faultdriver.KindBadConn, faultdriver.KindLostAfter}

// faultRegister registers each fenced driver once: the plain one and the one whose
// lazy checks run again before every guarded statement.
var (
	faultRegister sync.Once
	faultPlainDrv = faultDriver()
	faultCheckDrv = faultDriver()
)

const (
	faultPlainName = "faultdriver-fenced-mysql"
	faultCheckName = "faultdriver-fenced-mysql-recheck"
)

// faultOpen makes the accounts table (guarded or not) and a fenced pool over the
// driver registered as name.
func faultOpen(t *testing.T, guarded bool, drv *faultdriver.Driver, name string) *faultdriver.Env {
	faultRegister.Do(func() {
		sql.Register(faultPlainName, fencedsql.Wrap(faultPlainDrv, fencedsql.WithDialect(mysql.Dialect)))
		sql.Register(faultCheckName, fencedsql.Wrap(faultCheckDrv, fencedsql.WithDialect(mysql.Dialect),
			fencedsql.WithSchemaRecheck(time.Nanosecond)))
	})
	dsn := testdb.MySQL(t)
	// lock_wait_timeout: a transaction a fenced connection left open makes Reset's
	// TRUNCATE fail after 10 s instead of waiting for its metadata lock for good
	raw := testdb.Open(t, "mysql", fencetest.WithParam(dsn, "lock_wait_timeout=10"),
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`)
	if guarded {
		fencetest.Guard(t, context.Background(), raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	}
	fenced := testdb.Open(t, name, fencetest.WithParam(fencetest.WithParam(dsn, "fenced_tables=accounts"), "interpolateParams=true"))
	fenced.SetMaxOpenConns(4)
	t.Cleanup(func() { drv.Arm(nil) })
	return &faultdriver.Env{
		Driver: drv, Fenced: fenced, Token: func() uint64 { return 20 },
		Reset: func(t *testing.T) {
			t.Helper()
			testdb.Exec(t, raw, "TRUNCATE TABLE accounts")
			if guarded {
				testdb.Exec(t, raw, "TRUNCATE TABLE fencedsql_tomb_accounts")
			}
			testdb.Exec(t, raw, "INSERT INTO accounts VALUES (1, 100, 10, 1), (2, 100, 10, 1), (3, 100, 10, 1), (4, 100, 10, 1)")
			testdb.Exec(t, raw, "INSERT INTO accounts SELECT seq, 100, 10, 1 FROM seq_1000_to_1299")
		},
		// the 300 bulk rows (ids 1000…) as sums, the others row by row
		Snapshot: func(t *testing.T) string {
			t.Helper()
			s := faultdriver.Rows(t, raw, "bulk(n%d t%d v%d)", "SELECT COUNT(*), COALESCE(SUM(fence_token), 0), COALESCE(SUM(version), 0) FROM accounts WHERE id >= 1000") +
				faultdriver.Rows(t, raw, "[%d %d t%d v%d]", "SELECT id, balance, fence_token, version FROM accounts WHERE id < 1000 ORDER BY id")
			if guarded {
				s += faultdriver.Rows(t, raw, " tombbulk(n%d t%d)", "SELECT COUNT(*), COALESCE(SUM(fence_token), 0) FROM fencedsql_tomb_accounts WHERE id >= 1000") +
					" tomb" + faultdriver.Rows(t, raw, "[%d t%d]", "SELECT id, fence_token FROM fencedsql_tomb_accounts WHERE id < 1000 ORDER BY id")
			}
			return s
		},
	}
}

// faultPlan is the sweep over the operations below, on the plain fenced pool.
func faultPlan() faultdriver.Plan {
	return faultdriver.Plan{
		Setups: []string{"NoGuard", "Guard"},
		Open: func(t *testing.T, setup string) *faultdriver.Env {
			return faultOpen(t, setup == "Guard", faultPlainDrv, faultPlainName)
		},
		Ops: append(slices.Clone(faultdriver.CommonOps),
			faultdriver.Op{Name: "deleteRange", Query: "DELETE FROM accounts WHERE balance = 100 AND id < 3 ORDER BY id LIMIT 2"},
			faultdriver.Op{Name: "deleteBulk", Query: "DELETE FROM accounts WHERE id >= 1000 AND balance = 100"}, // listed past 256 rows
			faultdriver.Op{Name: "claimBulk", Query: "SELECT id FROM accounts WHERE id >= 1000 AND balance = 100 FOR UPDATE", Read: true},
			faultdriver.Op{Name: "upsert", Query: "INSERT INTO accounts (id, balance) VALUES (2, 5) ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)"}),

		Kinds:      faultKinds,
		Cont:       faultdriver.NextWrite,
		RolledBack: []string{"deadlock", "killconn", faultdriver.KindBadConn, faultdriver.KindLostAfter},
	}
}

// TestFaultAtEachInnerStatement: in a caller's transaction, a fault at any statement
// the wrapper sends leaves the committed table as the statements that reported success
// leave it, and Commit's outcome tells the truth (NotCommitted: nothing changed; never
// success after the server rolled back).
func TestFaultAtEachInnerStatement(t *testing.T) {
	faultdriver.InTransaction(t, faultPlan())
}

// TestFaultAtEachInnerStatementAutocommit: the same faults in a fenced write outside a
// transaction: its error's outcome (CommitOutcome) is true, and database/sql does not
// replay it after something reached the server.
func TestFaultAtEachInnerStatementAutocommit(t *testing.T) {
	faultdriver.Autocommit(t, faultPlan())
}

// TestFaultInsideLazyCheck: the same generator on a pool whose lazy schema check runs
// again before every guarded statement (WithSchemaRecheck(1ns)), so that the positions
// also land inside the check's catalog queries and the session check: a context that
// ended and a lost reply there fail closed. The full sweep tries every third position.
func TestFaultInsideLazyCheck(t *testing.T) {
	p := faultPlan()
	p.Setups = []string{"Guard"}
	p.Open = func(t *testing.T, _ string) *faultdriver.Env {
		return faultOpen(t, true, faultCheckDrv, faultCheckName)
	}
	p.Ops = faultdriver.OpsNamed(t, p.Ops, "delete", "claimAbsent")
	p.Kinds = []string{faultdriver.KindCancel, faultdriver.KindLostAfter}
	p.KStep = 3 // the check sends about 20 queries per guarded statement
	// a trial here sends 45 to 70 statements, most of them to information_schema: a
	// shorter budget keeps the default run near that of the tests above
	p.Budget = 2 * time.Second
	faultdriver.InTransaction(t, p)
}
