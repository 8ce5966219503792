package postgres_test

// Red-team rt21b: the last commit's literal decoding (plan/protect_literal.go) and
// RaiseTokenFloor's settle (dialect.FloorSettler, G16 "A raise returns when no older
// write can still commit").

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt21bFloorLoweredThroughUescapeSpellings (fail-open under WithDDL or
// WithDynamicSQL; naive layout). The last commit decodes U&'…' UESCAPE 'c' before the
// body checks, but only when the token right after the U&'…' is UESCAPE and the one
// after it is a three-character 'c' (protect_literal.go uescape). PostgreSQL reads more
// spellings of the same constant literal, none built at run time:
//
//   - continuation: U&'…'⏎'…' UESCAPE '!' is ONE Unicode-escape literal, and the escape
//     character applies to every part (the wrapper sees U&'…' followed by a plain
//     '…', decodes neither with '!');
//   - the escape string itself continued: UESCAPE ”⏎'!' is the escape '!';
//   - a U&'…' UESCAPE '!' literal nested in a dollar-quoted body (DO $$ … EXECUTE
//     U&'…' UESCAPE '!' … $$), and a U&"…" UESCAPE '!' identifier in a body: the
//     nested body is lexed, but no UESCAPE is applied to it (the top-level U&"…"
//     UESCAPE identifier is refused);
//   - at that nested depth even without UESCAPE: EXECUTE U&'… fenced\0073ql_floor …'
//     (the default escape, decoded at the top level) and EXECUTE 'UPDATE fenced'⏎
//     'sql_floor …' (a continued literal, joined at the top level) pass.
//
// Each writes fencedsql_floor (spelled fenced!0073ql_floor) through the fenced pool:
// the floor goes from 50 to 0 and a write under token 40 is then accepted.
//
// Right behaviour: read a U&'…'/U&"…" literal as PostgreSQL's lexer does — joined with
// its continuations, with the UESCAPE string joined with its own — at every nesting
// depth the body checks descend to; or refuse a body that holds UESCAPE at all.
func TestRTrt21bFloorLoweredThroughUescapeSpellings(t *testing.T) {
	const lower = "UPDATE fenced!0073ql_floor SET floor = 0 WHERE id = 1"
	dynamic := []string{"DO U&'BEGIN " + lower + "; END' UESCAPE '!'"}
	ddl := []string{"CREATE FUNCTION rt21b_g() RETURNS void LANGUAGE sql AS U&'" + lower + "' UESCAPE '!'"}
	requireFloorBodiesRefused(t, []floorBodyCase{
		{"ddl-escape-continued", "ddl", "CREATE FUNCTION rt21b_f() RETURNS void LANGUAGE sql AS U&'" + lower + "' UESCAPE ''\n'!'", "SELECT rt21b_f()", ddl},
		{"do-body-continued", "dynamic_sql", "DO U&'BEGIN UPDATE fenced'\n'!0073ql_floor SET floor = 0 WHERE id = 1; END' UESCAPE '!'", "", dynamic},
		{"do-nested-execute", "dynamic_sql", "DO $rt$BEGIN EXECUTE U&'" + lower + "' UESCAPE '!'; END$rt$", "", dynamic},
		{"do-nested-identifier", "dynamic_sql", "DO $rt$BEGIN UPDATE U&\"fenced!0073ql_floor\" UESCAPE '!' SET floor = 0 WHERE id = 1; END$rt$", "", dynamic},
		{"do-nested-default-escape", "dynamic_sql", "DO $rt$BEGIN EXECUTE U&'UPDATE fenced\\0073ql_floor SET floor = 0 WHERE id = 1'; END$rt$", "", dynamic},
		{"do-nested-continued", "dynamic_sql", "DO $rt$BEGIN EXECUTE 'UPDATE fenced'\n'sql_floor SET floor = 0 WHERE id = 1'; END$rt$", "", dynamic},
	})
}

// TestRTrt21bSettleWaitsForNonWriters (over-refusal: RaiseTokenFloor fails, or hangs
// until its context ends). G16 and OpenTransactionsQuery say RaiseTokenFloor waits for
// "the transactions open at the raise that hold a write lock on a guarded table"; the
// query counts ShareLock, ShareUpdateExclusiveLock, ExclusiveLock and
// AccessExclusiveLock as locks "for writing". None of them is taken by a statement that
// fires the guard: ShareLock (LOCK TABLE … IN SHARE MODE, CREATE INDEX) and
// ShareUpdateExclusiveLock (VACUUM, ANALYZE, CREATE INDEX CONCURRENTLY, autovacuum
// workers) even block or exclude writers. A transaction that holds one but has written
// nothing judged no write under the old floor — any write it makes later reads the
// raised floor — yet RaiseTokenFloor waits for it: here a reader holding
// `LOCK TABLE accounts IN SHARE MODE` (a consistent backup/report), and the raise fails
// with *SettleError after its 2 s context although no write is in flight. A manual or
// auto VACUUM of a large guarded table holds a raise up the same way for its whole run.
//
// Right behaviour: wait only for transactions that may have judged a write — the
// transactions holding RowExclusiveLock (the lock every INSERT/UPDATE/DELETE/MERGE/COPY
// takes on its target) on a guarded table; RaiseTokenFloor returns at once here.
func TestRTrt21bSettleWaitsForNonWriters(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))

	reader, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback() //nolint:errcheck
	var locked string
	// A read-only report: the table locked against writers for a consistent read.
	if _, err := reader.ExecContext(ctx, "LOCK TABLE accounts IN SHARE MODE"); err != nil {
		// The fenced pool may refuse LOCK TABLE; take the same lock on a plain connection.
		t.Logf("fenced pool: LOCK TABLE: %v; taking it on a plain connection", err)
		reader.Rollback() //nolint:errcheck
		reader, err = raw.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reader.ExecContext(ctx, "LOCK TABLE accounts IN SHARE MODE"); err != nil {
			t.Fatal(err)
		}
	}
	if err := reader.QueryRowContext(ctx, "SELECT string_agg(mode, ',') FROM pg_locks WHERE relation = 'accounts'::regclass AND pid = pg_backend_pid()").Scan(&locked); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	err = schema.RaiseTokenFloor(short, raw, postgres.Dialect, 10)
	if err != nil {
		t.Errorf("RaiseTokenFloor(10) with only a read-only transaction open (holding %s on accounts, no write): %v after %v; want it to return at once (that transaction judged no write)", locked, err, time.Since(start).Round(time.Millisecond))
	}
}

// rt21bConnector opens pgx connections whose queries containing block wait for their
// context to end and fail with its error: a stand-in for a settle query still running
// when RaiseTokenFloor's context ends (a slow pg_locks read on a busy server, a
// network stall).
type rt21bConnector struct {
	dsn   string
	d     driver.Driver
	block string
}

type rt21bInner interface {
	driver.Conn
	driver.QueryerContext
	driver.ExecerContext
	driver.ConnBeginTx
	driver.NamedValueChecker
}

type rt21bConn struct {
	rt21bInner
	block string
}

func (c rt21bConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if strings.Contains(q, c.block) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return c.rt21bInner.QueryContext(ctx, q, args)
}

func (k rt21bConnector) Connect(context.Context) (driver.Conn, error) {
	c, err := k.d.Open(k.dsn)
	if err != nil {
		return nil, err
	}
	return rt21bConn{c.(rt21bInner), k.block}, nil
}

func (k rt21bConnector) Driver() driver.Driver { return k.d }

// TestRTrt21bSettleErrorWrongOrMissing (cosmetic / unclear error). RaiseTokenFloor's
// doc and G16: once the raise has committed, a context that ends before the
// transactions open at the raise have ended gives a *schema.SettleError
// (errors.Is ErrFloorUnsettled) whose Open names "the sessions' process ids" — the
// floor is raised, call again to wait again. settle breaks that in two places:
//
//   - the context ends while the poll query (StillOpenQuery) runs: the SettleError's
//     Open is the virtual transaction ids ("3/1234"), not process ids (settle passes
//     ids, not pids), and the message then says "process ids 3/1234";
//   - the context ends while the first query (OpenTransactionsQuery) runs: a plain
//     "listing the transactions open at the raise: context deadline exceeded", not
//     ErrFloorUnsettled, though the floor is raised and open writers may remain — a
//     caller that tells "raised, not settled" from "not raised" by ErrFloorUnsettled
//     takes it for a failed raise.
//
// Right behaviour: every context end after the raise committed is a *SettleError
// (ErrFloorUnsettled), and its Open holds process ids (or the field says what it holds).
func TestRTrt21bSettleErrorWrongOrMissing(t *testing.T) {
	for _, c := range []struct{ name, block string }{
		{"poll", "'virtualxid'"},
		{"listing", "RowExclusiveLock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx := context.Background()
			raw := testdb.Open(t, "pgx", dsn,
				"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
			testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
			db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			writer, err := db.BeginTx(fencedsql.WithToken(ctx, 8), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Rollback() //nolint:errcheck
			if _, err := writer.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			slow := sql.OpenDB(rt21bConnector{dsn: dsn, d: raw.Driver(), block: c.block})
			defer slow.Close()
			short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			err = schema.RaiseTokenFloor(short, slow, postgres.Dialect, 10)
			var floor int64
			if err := raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor); err != nil {
				t.Fatal(err)
			}
			if floor != 10 {
				t.Fatalf("floor = %d after the raise; the scenario needs the raise committed", floor)
			}
			var se *schema.SettleError
			if !errors.As(err, &se) || !errors.Is(err, schema.ErrFloorUnsettled) {
				t.Fatalf("RaiseTokenFloor raised the floor to 10, a writer under 8 still open, context ended during the settle's %s query: err = %v; want a *SettleError (ErrFloorUnsettled)", c.name, err)
			}
			for _, pid := range se.Open {
				if _, perr := strconv.Atoi(pid); perr != nil {
					t.Errorf("SettleError.Open = %q; want the sessions' process ids (documented), got a virtual transaction id: %v", se.Open, err)
				}
			}
		})
	}
}
