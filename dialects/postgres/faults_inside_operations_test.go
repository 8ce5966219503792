package postgres_test

// A fault at each statement the wrapper sends for one caller operation (PostgreSQL;
// kept from red-team rt53a, no finding). internal/faultdriver sits between the wrapper
// and pgx's stdlib and puts one fault at the k-th statement: the operation's inner
// statements (the ctid-keyed two-statement DELETE, DELETE … RETURNING, the claims, the
// tombstone probe of an absent key, upserts), the session and lazy checks, the caller's
// next write, COMMIT. The server raises the fault itself (DO … RAISE … USING ERRCODE),
// so the transaction really aborts: lock_timeout (55P03), deadlock (40P01),
// statement_timeout (57014), unique (23505) and CHECK (23514) violations; and the
// shared kinds: a context that ended (in flight at COMMIT, where pgx closes the
// connection), driver.ErrBadConn, a reply lost after the statement ran. The caller sets
// a SAVEPOINT before the operation, rolls back to it after a failure, runs another
// write and commits. The checker (internal/faultdriver/sweep.go) compares the committed
// table and its tombstones with reference runs without a fault; a table with the
// database-side guard and one without. (A context that ended before the second
// statement makes Commit NotCommitted even after ROLLBACK TO a savepoint taken before
// the operation: an over-refusal, which the checker allows.)
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
//	                             position (1.5 to 2.5 minutes for the two tests, as
//	                             loaded as the machine is)
//
// The long form: FENCEDSQL_LONG=1 go test -timeout 0 -count=1 -run
// 'TestFaultAtEachInnerStatement' ./dialects/postgres/

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/faultdriver"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// faultRaise has the server raise SQLSTATE code in place of the statement.
func faultRaise(code string) faultdriver.Inject {
	return func(c *faultdriver.Conn, _ string) error {
		err := c.ExecRaw("DO $f$BEGIN RAISE EXCEPTION 'faultdriver injected %', '" + code + "' USING ERRCODE = '" + code + "'; END$f$")
		if err == nil {
			panic("faultdriver: the injection raised nothing")
		}
		return err
	}
}

var (
	faultRegister sync.Once
	faultDrv      = &faultdriver.Driver{
		Base:    stdlib.GetDefaultDriver(),
		LostErr: fmt.Errorf("faultdriver: connection lost after the statement was sent: %w", io.ErrUnexpectedEOF),
		Kinds: map[string]faultdriver.Inject{
			"locktimeout": faultRaise("55P03"),
			"deadlock":    faultRaise("40P01"),
			"stmttimeout": faultRaise("57014"),
			"unique":      faultRaise("23505"),
			"check":       faultRaise("23514"),
			faultdriver.KindCancel: func(c *faultdriver.Conn, q string) error {
				if q == "COMMIT" { // in flight: pgx closes the connection when the context ends
					c.Kill()
				}
				return context.Canceled
			},
		},
	}
)

const faultDriverName = "faultdriver-fenced-pgx"

// faultOpen makes the accounts table (guarded or not) and a fenced pool over faultDrv.
// The guard refuses TRUNCATE and tokenless writes, so each trial moves to fresh rows:
// ids base+1 … base+4 at token tokBase+10, written through the fenced pool; the trial's
// token is tokBase+20, and snapshots show ids and tokens relative to them.
func faultOpen(t *testing.T, guarded bool) *faultdriver.Env {
	faultRegister.Do(func() {
		sql.Register(faultDriverName, fencedsql.Wrap(faultDrv, fencedsql.WithDialect(postgres.Dialect)))
	})
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	if guarded {
		fencetest.Guard(t, context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	}
	fenced := testdb.Open(t, faultDriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	fenced.SetMaxOpenConns(4)
	t.Cleanup(func() { faultDrv.Arm(nil) })
	var base, tokBase int64
	e := &faultdriver.Env{Driver: faultDrv, Fenced: fenced, Token: func() uint64 { return uint64(tokBase + 20) },
		IDBase: func() int64 { return base }}
	e.Reset = func(t *testing.T) {
		t.Helper()
		base, tokBase = base+100, tokBase+1000
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, uint64(tokBase+10)),
			e.IDs("INSERT INTO accounts (id, balance) VALUES (#1, 100), (#2, 100), (#3, 100), (#4, 100)")); err != nil {
			t.Fatalf("reset: %v\nlast trial: %s", err, e.Last)
		}
	}
	e.Snapshot = func(t *testing.T) string {
		t.Helper()
		s := faultdriver.Rows(t, raw, "[%d %d t%d v%d]", "SELECT id - $1, balance, fence_token - $2, version FROM accounts WHERE id > $1 AND id <= $1 + 99 ORDER BY id", base, tokBase)
		if guarded {
			s += " tomb" + faultdriver.Rows(t, raw, "[%d t%d]", "SELECT id - $1, fence_token - $2 FROM fencedsql_tomb_accounts WHERE id > $1 AND id <= $1 + 99 ORDER BY id", base, tokBase)
		}
		return s
	}
	return e
}

// faultPlan is the sweep over the shared operations and PostgreSQL's own; #n is the
// trial's id base+n.
func faultPlan() faultdriver.Plan {
	return faultdriver.Plan{
		Setups: []string{"NoGuard", "Guard"},
		Open:   func(t *testing.T, setup string) *faultdriver.Env { return faultOpen(t, setup == "Guard") },
		Ops: append(slices.Clone(faultdriver.CommonOps),
			faultdriver.Op{Name: "deleteSub", Query: "DELETE FROM accounts WHERE id IN (SELECT id FROM accounts WHERE balance = 100 AND id > #0 AND id < #3)"},
			faultdriver.Op{Name: "deleteReturning", Query: "DELETE FROM accounts WHERE id = #1 RETURNING id", Read: true},
			faultdriver.Op{Name: "upsert", Query: "INSERT INTO accounts (id, balance) VALUES (#2, 5) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance"},
			faultdriver.Op{Name: "upsertNothing", Query: "INSERT INTO accounts (id, balance) VALUES (#8, 5) ON CONFLICT (id) DO NOTHING"},
			faultdriver.Op{Name: "claimShare", Query: "SELECT id FROM accounts WHERE id = #2 FOR NO KEY UPDATE", Read: true}),

		Kinds: []string{"locktimeout", "deadlock", "stmttimeout", "unique", "check",
			faultdriver.KindCancel, faultdriver.KindBadConn, faultdriver.KindLostAfter},
		Cont:       faultdriver.NextWrite,
		Savepoint:  true,
		RolledBack: []string{faultdriver.KindBadConn, faultdriver.KindLostAfter},
	}
}

// TestFaultAtEachInnerStatement: in a caller's transaction (with a savepoint around the
// operation), a fault at any statement the wrapper sends leaves the committed table as
// the statements that reported success leave it, and Commit's outcome tells the truth.
func TestFaultAtEachInnerStatement(t *testing.T) {
	faultdriver.InTransaction(t, faultPlan())
}

// TestFaultAtEachInnerStatementAutocommit: the same faults in a fenced write outside a
// transaction: its error's outcome (CommitOutcome) is true, and database/sql does not
// replay it after something reached the server.
func TestFaultAtEachInnerStatementAutocommit(t *testing.T) {
	faultdriver.Autocommit(t, faultPlan())
}
