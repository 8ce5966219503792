package fencedpgx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The conformance behaviours of fencedsql (docs/design.md G1–G6, G9–G10 where they
// apply) through fencedpgx on a real PostgreSQL, in every pgx query exec mode.

var modes = []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"}

const schema = `
CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT, balance BIGINT NOT NULL,
	fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
CREATE TABLE audit_log (id BIGSERIAL PRIMARY KEY, account_id BIGINT NOT NULL, note TEXT);
CREATE UNIQUE INDEX accounts_owner_key ON accounts (owner);`

// pgEnv is one mode's database: the raw pool (unfenced, for setup and checks) and the
// fenced pool over a pool of the same mode.
type pgEnv struct {
	t    *testing.T
	ctx  context.Context
	dsn  string
	raw  *pgxpool.Pool
	db   *fencedpgx.Pool
	mode string
}

func openPool(t testing.TB, ctx context.Context, dsn string, max int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = max
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// oneConnDB makes a database, runs plainAccounts and then seed on it, and returns its
// DSN, a raw pool of two connections, and a fenced pool of one connection guarding
// accounts (every call shares that connection); both pools close with the test.
func oneConnDB(t *testing.T, ctx context.Context, seed string) (string, *pgxpool.Pool, *fencedpgx.Pool) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw := openPool(t, ctx, dsn, 2)
	if _, err := raw.Exec(ctx, plainAccounts+seed); err != nil {
		t.Fatal(err)
	}
	db, err := fencedpgx.New(openPool(t, ctx, dsn, 1), fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return dsn, raw, db
}

func newPGEnv(t *testing.T, mode string, opts ...fencedsql.Option) *pgEnv {
	t.Helper()
	dsn := fencetest.WithParam(testdb.Postgres(t), "default_query_exec_mode="+mode)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	raw := openPool(t, ctx, dsn, 4)
	if _, err := raw.Exec(ctx, schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	e := &pgEnv{t: t, ctx: ctx, dsn: dsn, raw: raw, mode: mode}
	e.db = e.fenced(4, opts...)
	return e
}

// fenced opens a fenced pool (of max connections) on the mode's database.
func (e *pgEnv) fenced(max int32, opts ...fencedsql.Option) *fencedpgx.Pool {
	e.t.Helper()
	all := append([]fencedsql.Option{fencedsql.Guard("accounts")}, opts...)
	db, err := fencedpgx.New(openPool(e.t, e.ctx, e.dsn, max), all...)
	if err != nil {
		e.t.Fatal(err)
	}
	return db
}

func tok(ctx context.Context, t uint64) context.Context { return fencedsql.WithToken(ctx, t) }

func (e *pgEnv) reset() {
	e.t.Helper()
	if _, err := e.raw.Exec(e.ctx, "DELETE FROM accounts; DELETE FROM audit_log"); err != nil {
		e.t.Fatal(err)
	}
}

// seed inserts rows through the fenced pool with token t.
func (e *pgEnv) seed(t uint64, ids ...int64) {
	e.t.Helper()
	for _, id := range ids {
		if _, err := e.db.Exec(tok(e.ctx, t), "INSERT INTO accounts (id, balance) VALUES ($1, $2)", id, 100); err != nil {
			e.t.Fatalf("seed %d: %v", id, err)
		}
	}
}

type acct struct{ balance, token, version int64 }

func (e *pgEnv) row(id int64) acct {
	e.t.Helper()
	var a acct
	if err := e.raw.QueryRow(e.ctx, "SELECT balance, fence_token, version FROM accounts WHERE id = $1", id).Scan(&a.balance, &a.token, &a.version); err != nil {
		e.t.Fatalf("row %d: %v", id, err)
	}
	return a
}

func (e *pgEnv) count() int {
	e.t.Helper()
	var n int
	if err := e.raw.QueryRow(e.ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
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

func wantRow(t *testing.T, got, want acct) {
	t.Helper()
	if got != want {
		t.Fatalf("row = %+v, want %+v", got, want)
	}
}

func TestConformanceQueryExecModes(t *testing.T) {
	cases := []struct {
		name string
		fn   func(*testing.T, *pgEnv)
	}{
		{"TokenStory", testStory},
		{"InsertRecordsTokenAndVersion", testInsert},
		{"FreshAndEqualToken", testEqualToken},
		{"StaleFencedNothingChanged", testStale},
		{"MultiRowAllOrNothing", testMultiRow},
		{"NoToken", testNoToken},
		{"VersionConflict", testVersion},
		{"UnsupportedNeverSent", testUnsupported},
		{"DeleteFenced", testDelete},
		{"UpsertFenced", testUpsert},
		{"Duplicate", testDuplicate},
		{"ReturningFenced", testReturning},
		{"ClaimForUpdate", testClaim},
		{"NamedArgs", testNamedArgs},
		{"ExecModeArgument", testModeArgument},
		{"PreparedAcrossTokens", testPrepared},
		{"StatementCacheOneEntry", testStatementCache},
		{"LeaseLostAtCommit", testLeaseLost},
		{"Savepoint", testSavepoint},
		{"Batch", testBatch},
		{"BatchStale", testBatchStale},
		{"BatchClaimRuleTable", testBatchClaimRuleTable},
		{"BatchClaimRuleAdded", testBatchClaimRuleAdded},
		{"BatchRefusedNothingSent", testBatchRefused},
		{"CopyFrom", testCopyFrom},
		{"Sqlc", testSqlc},
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					e.t = t
					e.reset()
					c.fn(t, e)
				})
			}
		})
	}
}

const debit = "UPDATE accounts SET balance = balance - $1 WHERE id = $2"
