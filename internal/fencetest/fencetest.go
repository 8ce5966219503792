// Package fencetest is the conformance suite of the fencedsql driver wrapper. The same
// tests run against real PostgreSQL (pgx), MariaDB (go-sql-driver/mysql) and SQLite,
// each from its dialect package's tests, and check the wrapper's guarantees
// (docs/design.md, G1 to G6): a guarded write never changes a row already written with
// a newer token, and the check is part of the write statement; a fenced write fails
// with ErrFenced, and a statement over several rows is all-or-nothing; a write records
// its token and bumps the row's version; no insert, update, delete or upsert on a
// guarded table gets through unfenced; tokens travel as bind parameters, so one
// prepared statement serves every token; the happy path is one statement.
//
//	func TestConformance(t *testing.T) { fencetest.Run(t, fencetest.Postgres()) }
package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jmoiron/sqlx"
)

// Backend describes one database for the suite.
type Backend struct {
	Name       string
	DriverName string                  // the fenced name: "fenced-pgx"
	RawName    string                  // the plain driver: "pgx"
	DSN        func(testing.TB) string // a fresh database
	Numbered   bool                    // $n placeholders
	TableDDL   string                  // CREATE TABLE accounts …
	Upsert     string                  // upsert of (id, balance) with two placeholders
	Returning  bool                    // UPDATE … RETURNING is supported
	MySQL      bool
	// RowLockWaits, when set, counts the statements of the test's database that wait
	// for a row lock (through raw, the plain driver): the tests whose interleaving needs
	// "this statement now waits for that row" poll it instead of sleeping a fixed time,
	// which on a loaded machine was sometimes too short. Nil: they sleep 300ms.
	RowLockWaits func(ctx context.Context, raw *sql.DB) (int, error)
}

const cols = "id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"

// Postgres is the PostgreSQL backend (import dialects/postgres in the test).
func Postgres() Backend {
	return Backend{
		Name: "postgres", DriverName: "fenced-pgx", RawName: "pgx", DSN: testdb.Postgres, Numbered: true,
		TableDDL:  "CREATE TABLE accounts (" + cols + ")",
		Upsert:    "INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance",
		Returning: true, RowLockWaits: postgresRowLockWaits,
	}
}

// postgresRowLockWaits counts the sessions of raw's database waiting for a row lock
// (on another transaction's id or on a tuple; not a table or advisory lock). Each test
// has a database of its own (testdb.Postgres).
func postgresRowLockWaits(ctx context.Context, raw *sql.DB) (int, error) {
	var n int
	err := raw.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
		AND wait_event_type = 'Lock' AND wait_event IN ('transactionid', 'tuple')`).Scan(&n)
	return n, err
}

// MySQL is the MariaDB/MySQL backend (import dialects/mysql in the test).
func MySQL() Backend {
	return Backend{
		Name: "mysql", DriverName: "fenced-mysql", RawName: "mysql", DSN: testdb.MySQL, MySQL: true,
		TableDDL: "CREATE TABLE accounts (" + cols + ") ENGINE=InnoDB",
		Upsert:   "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES(balance)",
	}
}

// SQLite is the embedded SQLite backend (import dialects/sqlite in the test).
func SQLite() Backend {
	return Backend{
		Name: "sqlite", DriverName: "fenced-sqlite", RawName: "sqlite", DSN: testdb.SQLite,
		TableDDL:  "CREATE TABLE accounts (" + cols + ")",
		Upsert:    "INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance",
		Returning: true,
	}
}

// WithParam appends a key=value parameter to a DSN in URL or keyword/value form.
func WithParam(dsn, kv string) string {
	switch {
	case strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	case strings.Contains(dsn, "://") || strings.Contains(dsn, "/") || strings.HasPrefix(dsn, "file:"):
		return dsn + "?" + kv
	default:
		return dsn + " " + kv
	}
}

// env is one test's database: the fenced DB, the raw DB on the same database, and the
// placeholder rebinding.
type env struct {
	t   *testing.T
	b   Backend
	dsn string
	db  *sql.DB // fenced
	raw *sql.DB // plain driver
	ctx context.Context
}

func setup(t *testing.T, b Backend, params ...string) *env {
	t.Helper()
	dsn := b.DSN(t)
	raw, err := sql.Open(b.RawName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(b.TableDDL); err != nil {
		t.Fatalf("create table: %v", err)
	}
	fdsn := WithParam(dsn, "fenced_tables=accounts")
	for _, p := range params {
		fdsn = WithParam(fdsn, p)
	}
	db, err := sql.Open(b.DriverName, fdsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// A bound against a hung statement, not a timing check: one env serves every
	// subtest of a suite test (NoResurrectionAutoKey runs dozens of tables), which on
	// two loaded CI cores took more than the minute this once was.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, b: b, dsn: dsn, db: db, raw: raw, ctx: ctx}
}

// q rebinds ? placeholders for the backend (the suite's SQL has no ? in literals).
func (e *env) q(s string) string {
	if !e.b.Numbered {
		return s
	}
	return sqlx.Rebind(sqlx.DOLLAR, s)
}

func tok(ctx context.Context, t uint64) context.Context { return fencedsql.WithToken(ctx, t) }

// seed inserts rows through the wrapper with token t.
func (e *env) seed(t uint64, ids ...int64) {
	e.t.Helper()
	for _, id := range ids {
		if _, err := e.db.ExecContext(tok(e.ctx, t), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), id, 100); err != nil {
			e.t.Fatalf("seed %d: %v", id, err)
		}
	}
}

type row struct{ balance, token, version int64 }

func (e *env) row(id int64) row {
	e.t.Helper()
	var r row
	err := e.raw.QueryRowContext(e.ctx, e.q("SELECT balance, fence_token, version FROM accounts WHERE id = ?"), id).Scan(&r.balance, &r.token, &r.version)
	if err != nil {
		e.t.Fatalf("read row %d: %v", id, err)
	}
	return r
}

func (e *env) count() int {
	var n int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM accounts").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

// Run runs the whole suite against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		fn   func(*testing.T, Backend)
	}{
		{"TokenStory7And8", testStory},
		{"InsertRecordsTokenAndVersion", testInsert},
		{"MultiRowAllOrNothing", testMultiRow},
		{"EqualTokenAccepted", testEqualToken},
		{"StrictMode", testStrict},
		{"DeleteFenced", testDelete},
		{"UpsertFenced", testUpsert},
		{"VersionConflict", testVersion},
		{"NoToken", testNoToken},
		{"Unsupported", testUnsupported},
		{"MappedColumnsReplaced", testMappedColumnsReplaced},
		{"Duplicate", testDuplicate},
		{"PreparedAcrossTokens", testPrepared},
		{"LeaseLostAtCommit", testLeaseLost},
		{"RacingConnections", testRace},
		{"SchemaCheck", testSchema},
		{"Sqlx", testSqlx},
		{"ClaimUnderConcurrentCommit", testClaimRace},
	}
	// Tests of features a database has are added only for it (nothing is skipped).
	if b.Returning {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, Backend)
		}{"Returning", testReturning})
	}
	if b.MySQL {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, Backend)
		}{"NonStrictMySQLSession", testNonStrictMySQL})
	}
	if b.Numbered || b.MySQL {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T, Backend)
		}{"ClaimDisplacedUnderReadCommitted", testClaimDisplaced}, struct {
			name string
			fn   func(*testing.T, Backend)
		}{"EarlierStampedRows", testEarlierStampedRows})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

// awaitRowLockWait returns once a statement of the test's database waits for a row
// lock (Backend.RowLockWaits), or finished is closed (the statement ended without
// waiting), or 20s passed; without RowLockWaits it sleeps 300ms, as the tests did
// before.
func (e *env) awaitRowLockWait(ctx context.Context, finished <-chan struct{}) {
	e.t.Helper()
	if e.b.RowLockWaits == nil {
		time.Sleep(300 * time.Millisecond)
		return
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n, err := e.b.RowLockWaits(ctx, e.raw)
		if err != nil {
			e.t.Fatalf("polling for a row lock wait: %v", err)
		}
		if n > 0 {
			return
		}
		select {
		case <-finished:
			return
		default:
		}
	}
}
