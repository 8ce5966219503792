package fencedpgx_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx/internal/sqlcpgx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
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

// A takes token 7 and pauses; B takes 8 and commits; A's late write fails with
// ErrFenced and B's work survives (G1, G2).
func testStory(t *testing.T, e *pgEnv) {
	e.seed(1, 1)
	txA, err := e.db.Begin(tok(e.ctx, 7))
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(e.ctx)
	txB, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txB.Exec(e.ctx, debit, 10, 1); err != nil {
		t.Fatal(err)
	}
	if err := txB.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	// A's statement context carries no token: the transaction's binds it.
	_, err = txA.Exec(e.ctx, debit, 50, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	var fe *fencedsql.FencedError
	if !errors.As(err, &fe) || fe.Token != 7 || fe.Table != "accounts" {
		t.Fatalf("FencedError = %+v", fe)
	}
	if err := txA.Commit(e.ctx); err == nil {
		t.Fatal("commit of an aborted transaction succeeded")
	}
	wantRow(t, e.row(1), acct{90, 8, 2})
}

func testInsert(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testEqualToken(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	if _, err := e.db.Exec(tok(e.ctx, 5), debit, 1, 1); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	tag, err := e.db.Exec(tok(e.ctx, 6), debit, 1, 1)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("fresh token: %v %v", tag, err)
	}
	wantRow(t, e.row(1), acct{98, 6, 3})
}

func testStale(t *testing.T, e *pgEnv) {
	e.seed(9, 1)
	_, err := e.db.Exec(tok(e.ctx, 8), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 9, 1})
}

func testMultiRow(t *testing.T, e *pgEnv) {
	e.seed(5, 1, 2, 3)
	if _, err := e.db.Exec(tok(e.ctx, 9), debit, 1, 2); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Exec(tok(e.ctx, 7), "UPDATE accounts SET balance = 0 WHERE id IN (1, 2, 3)")
	wantErr(t, err, fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 5, 1})
	wantRow(t, e.row(2), acct{99, 9, 2})
	wantRow(t, e.row(3), acct{100, 5, 1})
}

func testNoToken(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	_, err := e.db.Exec(e.ctx, debit, 1, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	_, err = e.db.Exec(tok(e.ctx, 0), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	tx, err := e.db.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, "INSERT INTO accounts (id, balance) VALUES (2, 1)")
	wantErr(t, err, fencedsql.ErrNoToken)
	_ = tx.Rollback(e.ctx)
	wantRow(t, e.row(1), acct{100, 5, 1})
	if e.count() != 1 {
		t.Fatal("a write without a token changed the table")
	}
	// Reads need no token.
	var n int
	if err := e.db.QueryRow(e.ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil || n != 1 {
		t.Fatalf("read: %d %v", n, err)
	}
}

func testVersion(t *testing.T, e *pgEnv) {
	e.seed(5, 1) // version 1
	_, err := e.db.Exec(fencedsql.ExpectVersion(tok(e.ctx, 6), 7), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	wantRow(t, e.row(1), acct{100, 5, 1})
	if _, err := e.db.Exec(fencedsql.ExpectVersion(tok(e.ctx, 6), 1), debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{99, 6, 2})
	// DELETE with a stale version: nothing deleted.
	_, err = e.db.Exec(fencedsql.ExpectVersion(tok(e.ctx, 6), 1), "DELETE FROM accounts WHERE id = $1", 1)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	if e.count() != 1 {
		t.Fatal("row deleted")
	}
}

func testUnsupported(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	for _, q := range []string{
		"TRUNCATE accounts",
		"UPDATE accounts SET balance = 0; SELECT 1",
		"WITH d AS (DELETE FROM accounts RETURNING id) SELECT count(*) FROM d",
		"UPDATE accounts SET fence_token = 99",
		"DROP TABLE accounts",
	} {
		_, err := e.db.Exec(tok(e.ctx, 9), q)
		if q == "UPDATE accounts SET fence_token = 99" {
			// A statement that assigns the fencing column is fenced with the wrapper's
			// own assignment in its place (G4): it succeeds and records token 9.
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			continue
		}
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("%s: err = %v, want ErrUnsupported", q, err)
		}
	}
	if e.count() != 1 {
		t.Fatal("a refused statement was sent")
	}
	wantRow(t, e.row(1), acct{100, 9, 2})
}

func testDelete(t *testing.T, e *pgEnv) {
	e.seed(9, 1, 2, 3)
	// Stale: refused, nothing deleted (outside a transaction: the wrapper's own).
	_, err := e.db.Exec(tok(e.ctx, 8), "DELETE FROM accounts WHERE id = $1", 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if e.count() != 3 {
		t.Fatal("stale DELETE deleted")
	}
	// Fresh, outside a transaction.
	tag, err := e.db.Exec(tok(e.ctx, 9), "DELETE FROM accounts WHERE id = $1", 1)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("delete: %v %v", tag, err)
	}
	// In the caller's transaction, stale then fresh.
	tx, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(e.ctx, "DELETE FROM accounts WHERE id = $1", 2)
	wantErr(t, err, fencedsql.ErrFenced)
	_ = tx.Rollback(e.ctx)
	tx, err = e.db.Begin(tok(e.ctx, 10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, "DELETE FROM accounts WHERE id = $1", 2); err != nil {
		t.Fatal(err)
	}
	// DELETE … RETURNING in the transaction.
	var id int64
	if err := tx.QueryRow(e.ctx, "DELETE FROM accounts WHERE id = $1 RETURNING id", 3).Scan(&id); err != nil || id != 3 {
		t.Fatalf("delete returning: %d %v", id, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.count() != 0 {
		t.Fatal("rows left")
	}
}

func testUpsert(t *testing.T, e *pgEnv) {
	const up = "INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance"
	e.seed(9, 1)
	_, err := e.db.Exec(tok(e.ctx, 8), up, 1, 5)
	wantErr(t, err, fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 9, 1})
	if _, err := e.db.Exec(tok(e.ctx, 10), up, 1, 5); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{5, 10, 2})
}

func testDuplicate(t *testing.T, e *pgEnv) {
	if _, err := e.db.Exec(tok(e.ctx, 1), "INSERT INTO accounts (id, owner, balance) VALUES (1, 'ann', 1)"); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Exec(tok(e.ctx, 1), "INSERT INTO accounts (id, owner, balance) VALUES (2, 'ann', 1)")
	wantErr(t, err, fencedsql.ErrDuplicate)
	var de *fencedsql.DuplicateError
	if !errors.As(err, &de) || de.Constraint != "accounts_owner_key" {
		t.Fatalf("DuplicateError = %+v", de)
	}
	// Unguarded table, through Query (the error arrives with the rows).
	_, err = e.db.Exec(e.ctx, "CREATE TABLE IF NOT EXISTS tags (name TEXT PRIMARY KEY)")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		rows, _ := e.db.Query(e.ctx, "INSERT INTO tags VALUES ('x') RETURNING name")
		for rows.Next() {
		}
		err = rows.Err()
	}
	wantErr(t, err, fencedsql.ErrDuplicate)
}

func testReturning(t *testing.T, e *pgEnv) {
	e.seed(9, 1, 2)
	// Stale: the fencing error arrives through the rows.
	rows, err := e.db.Query(tok(e.ctx, 8), "UPDATE accounts SET balance = 1 WHERE id IN (1, 2) RETURNING id")
	if err == nil {
		for rows.Next() {
		}
		err = rows.Err()
	}
	wantErr(t, err, fencedsql.ErrFenced)
	var bal int64
	if err := e.db.QueryRow(tok(e.ctx, 8), "UPDATE accounts SET balance = 1 WHERE id = 1 RETURNING balance").Scan(&bal); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("QueryRow: %v", err)
	}
	if err := e.db.QueryRow(tok(e.ctx, 9), "UPDATE accounts SET balance = 1 WHERE id = 1 RETURNING balance").Scan(&bal); err != nil || bal != 1 {
		t.Fatalf("fresh QueryRow: %d %v", bal, err)
	}
	wantRow(t, e.row(2), acct{100, 9, 1})
}

// A locking read in a statement that carries a token claims its rows (G10): an older
// holder's late write to them then fails.
func testClaim(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	tx, err := e.db.Begin(tok(e.ctx, 9))
	if err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal); err != nil || bal != 100 {
		t.Fatalf("claim: %d %v", bal, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if a := e.row(1); a.token != 9 {
		t.Fatalf("claim did not stamp the token: %+v", a)
	}
	_, err = e.db.Exec(tok(e.ctx, 7), debit, 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	// A stale claim fails (in a transaction; outside one a locking read with a token is
	// refused); without a token it is a plain locking read.
	err = e.db.QueryRow(tok(e.ctx, 8), "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal)
	wantErr(t, err, fencedsql.ErrUnsupported)
	stale, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	err = stale.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal)
	wantErr(t, err, fencedsql.ErrFenced)
	_ = stale.Rollback(e.ctx)
	if err := e.db.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 1).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{100, 9, 2})
}

func testNamedArgs(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	q := "UPDATE accounts SET balance = balance - @amount WHERE id = @id"
	if _, err := e.db.Exec(tok(e.ctx, 6), q, pgx.NamedArgs{"amount": 3, "id": 1}); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.Exec(tok(e.ctx, 5), q, pgx.NamedArgs{"amount": 3, "id": 1})
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = e.db.Exec(e.ctx, q, pgx.NamedArgs{"amount": 3, "id": 1})
	wantErr(t, err, fencedsql.ErrNoToken)
	var bal int64
	if err := e.db.QueryRow(e.ctx, "SELECT balance FROM accounts WHERE id = @id", pgx.NamedArgs{"id": 1}).Scan(&bal); err != nil || bal != 97 {
		t.Fatalf("named read: %d %v", bal, err)
	}
	wantRow(t, e.row(1), acct{97, 6, 2})
}

// pgx's per-call QueryExecMode argument works in front of a fenced statement.
func testModeArgument(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	for i, m := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec} {
		if _, err := e.db.Exec(tok(e.ctx, uint64(6+i)), debit, m, 1, 1); err != nil {
			t.Fatalf("mode %v: %v", m, err)
		}
		_, err := e.db.Exec(tok(e.ctx, 5), debit, m, 1, 1)
		wantErr(t, err, fencedsql.ErrFenced)
	}
	wantRow(t, e.row(1), acct{97, 8, 4})
}

// A statement prepared once serves transactions with different tokens (G5).
func testPrepared(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	pc, err := pgx.Connect(e.ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(e.ctx)
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := c.Prepare(e.ctx, "debit", debit)
	if err != nil {
		t.Fatal(err)
	}
	if sd.Name != "debit" || sd.SQL != debit || len(sd.ParamOIDs) != 2 {
		t.Fatalf("description = %+v", sd)
	}
	if _, err := c.Prepare(e.ctx, "debit", debit); err != nil {
		t.Fatalf("Prepare is idempotent: %v", err)
	}
	for _, tk := range []uint64{6, 7} {
		tx, err := c.Begin(tok(e.ctx, tk))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(e.ctx, "debit", 1, 1); err != nil {
			t.Fatalf("token %d: %v", tk, err)
		}
		if err := tx.Commit(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Exec(tok(e.ctx, 6), "debit", 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = c.Exec(e.ctx, "debit", 1, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	// The caller's name is not a side door: on the raw connection it names nothing.
	if _, err := pc.Exec(e.ctx, "debit", 1, 1); err == nil {
		t.Fatal("the caller's name ran on the raw connection")
	}
	// Through a pool's transaction too, and a read prepared as written.
	tx, err := e.db.Begin(tok(e.ctx, 8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(e.ctx, "d2", debit); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(e.ctx, "bal", "SELECT balance FROM accounts WHERE id = $1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, "d2", 1, 1); err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRow(e.ctx, "bal", 1).Scan(&bal); err != nil || bal != 97 {
		t.Fatalf("prepared read: %d %v", bal, err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{97, 8, 4})
}

// In cache_statement mode pgx caches one prepared statement per text: the token is a
// parameter, so writes with many tokens share one entry (G5).
func testStatementCache(t *testing.T, e *pgEnv) {
	e.seed(1, 1)
	db := e.fenced(1)
	for tk := uint64(2); tk < 7; tk++ {
		if _, err := db.Exec(tok(e.ctx, tk), debit, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	err := db.QueryRow(e.ctx, "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'UPDATE accounts SET balance = balance - $1%'").Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	if e.mode == "cache_statement" {
		want = 1
	}
	if n != want {
		t.Fatalf("%d prepared statements for the fenced UPDATE, want %d", n, want)
	}
}

type lostLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *lostLease) Token() uint64         { return l.tok }
func (l *lostLease) Lost() <-chan struct{} { return l.lost }
func (l *lostLease) Err() error {
	select {
	case <-l.lost:
		return lockclient.ErrLeaseLost
	default:
		return nil
	}
}

func testLeaseLost(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	l := &lostLease{tok: 6, lost: make(chan struct{})}
	tx, err := e.db.Begin(fencedsql.WithLease(e.ctx, l))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	close(l.lost)
	err = tx.Commit(e.ctx)
	wantErr(t, err, lockclient.ErrLeaseLost)
	if err := tx.Rollback(e.ctx); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("Rollback after Commit: %v", err)
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testSavepoint(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	tx, err := e.db.Begin(tok(e.ctx, 6))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := tx.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Exec(e.ctx, debit, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := sp.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(e.ctx, debit, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{98, 6, 2})
}

func testBatch(t *testing.T, e *pgEnv) {
	e.seed(5, 1, 2, 3)
	b := &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue("DELETE FROM accounts WHERE id = $1", 2)
	b.Queue("SELECT balance FROM accounts WHERE id = $1", 1)
	b.Queue("INSERT INTO accounts (id, balance) VALUES ($1, $2)", 4, 7)
	b.Queue("SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 3)
	br := e.db.SendBatch(tok(e.ctx, 6), b)
	if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("update: %v %v", tag, err)
	}
	if tag, err := br.Exec(); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("delete: %v %v", tag, err)
	}
	var bal int64
	if err := br.QueryRow().Scan(&bal); err != nil || bal != 99 {
		t.Fatalf("select: %d %v", bal, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	wantRow(t, e.row(1), acct{99, 6, 2})
	wantRow(t, e.row(4), acct{7, 6, 1})
	wantRow(t, e.row(3), acct{100, 6, 2}) // claimed
	if e.count() != 3 {
		t.Fatal("DELETE in the batch did not delete")
	}
	// In a transaction, with callbacks.
	tx, err := e.db.Begin(tok(e.ctx, 7))
	if err != nil {
		t.Fatal(err)
	}
	b = &pgx.Batch{}
	var got int64
	b.Queue(debit, 1, 1).Exec(func(tag pgconn.CommandTag) error { return nil })
	b.Queue("UPDATE accounts SET balance = 5 WHERE id = $1 RETURNING balance", 3).QueryRow(func(r pgx.Row) error { return r.Scan(&got) })
	if err := tx.SendBatch(e.ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got != 5 {
		t.Fatalf("callback got %d", got)
	}
	wantRow(t, e.row(3), acct{5, 7, 3})
}

// A batch with a stale statement in it fails with ErrFenced, and nothing of it is
// applied (the batch is one transaction).
func testBatchStale(t *testing.T, e *pgEnv) {
	e.seed(5, 1, 3)
	e.seed(9, 2)
	b := &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue(debit, 1, 2) // row 2 was written with token 9
	b.Queue(debit, 1, 3)
	br := e.db.SendBatch(tok(e.ctx, 6), b)
	if _, err := br.Exec(); err != nil {
		t.Fatalf("first: %v", err)
	}
	_, err := br.Exec()
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = br.Exec()
	wantErr(t, err, fencedsql.ErrFenced)
	wantErr(t, br.Close(), fencedsql.ErrFenced)
	wantRow(t, e.row(1), acct{100, 5, 1})
	wantRow(t, e.row(2), acct{100, 9, 1})
	wantRow(t, e.row(3), acct{100, 5, 1})
	// Close alone reports it too, and a stale DELETE in a batch deletes nothing.
	b = &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue("DELETE FROM accounts WHERE id = $1", 2)
	wantErr(t, e.db.SendBatch(tok(e.ctx, 6), b).Close(), fencedsql.ErrFenced)
	if e.count() != 3 {
		t.Fatal("stale DELETE in a batch deleted")
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
}

func testBatchRefused(t *testing.T, e *pgEnv) {
	e.seed(5, 1)
	for name, ctx := range map[string]context.Context{"no token": e.ctx, "unsupported": tok(e.ctx, 6)} {
		b := &pgx.Batch{}
		b.Queue("INSERT INTO audit_log (account_id) VALUES (1)")
		if name == "no token" {
			b.Queue(debit, 1, 1)
		} else {
			b.Queue("TRUNCATE accounts")
		}
		br := e.db.SendBatch(ctx, b)
		_, err := br.Exec()
		want := map[string]error{"no token": fencedsql.ErrNoToken, "unsupported": fencedsql.ErrUnsupported}[name]
		wantErr(t, err, want)
		wantErr(t, br.Close(), want)
	}
	var n int
	if err := e.raw.QueryRow(e.ctx, "SELECT count(*) FROM audit_log").Scan(&n); err != nil || n != 0 {
		t.Fatalf("a refused batch was sent: %d %v", n, err)
	}
	wantRow(t, e.row(1), acct{100, 5, 1})
	b := &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue(debit, 1, 1)
	wantErr(t, e.db.SendBatch(tok(e.ctx, 6), b).Close(), fencedsql.ErrUnsupported)
}

func testCopyFrom(t *testing.T, e *pgEnv) {
	_, err := e.db.CopyFrom(tok(e.ctx, 5), pgx.Identifier{"accounts"}, []string{"id", "balance"}, pgx.CopyFromRows([][]any{{1, 1}}))
	wantErr(t, err, fencedsql.ErrUnsupported)
	if !strings.Contains(err.Error(), "bulk copy") {
		t.Fatalf("unclear refusal: %v", err)
	}
	_, err = e.db.CopyFrom(e.ctx, pgx.Identifier{"public", "accounts"}, []string{"id", "balance"}, pgx.CopyFromRows([][]any{{1, 1}}))
	wantErr(t, err, fencedsql.ErrUnsupported)
	n, err := e.db.CopyFrom(e.ctx, pgx.Identifier{"audit_log"}, []string{"account_id", "note"}, pgx.CopyFromRows([][]any{{1, "a"}, {2, "b"}}))
	if err != nil || n != 2 {
		t.Fatalf("copy into an unguarded table: %d %v", n, err)
	}
	if e.count() != 0 {
		t.Fatal("refused copy was sent")
	}
}

// sqlc-shaped code for pgx/v5 takes the fenced pool (and its transactions) unchanged.
func testSqlc(t *testing.T, e *pgEnv) {
	q := sqlcpgx.New(e.db)
	ctx := tok(e.ctx, 5)
	bob := pgtype.Text{String: "bob", Valid: true}
	for id := int64(1); id <= 3; id++ {
		if err := q.CreateAccount(ctx, sqlcpgx.CreateAccountParams{ID: id, Owner: pgtype.Text{String: "o" + string(rune('0'+id)), Valid: true}, Balance: 100}); err != nil {
			t.Fatal(err)
		}
	}
	err := q.CreateAccount(e.ctx, sqlcpgx.CreateAccountParams{ID: 9, Balance: 1})
	wantErr(t, err, fencedsql.ErrNoToken)
	if n, err := q.AddBalance(tok(e.ctx, 6), sqlcpgx.AddBalanceParams{Balance: 5, ID: 1}); err != nil || n != 1 {
		t.Fatalf("AddBalance: %d %v", n, err)
	}
	_, err = q.AddBalance(ctx, sqlcpgx.AddBalanceParams{Balance: 5, ID: 1})
	wantErr(t, err, fencedsql.ErrFenced)
	a, err := q.UpdateBalanceReturning(tok(e.ctx, 7), sqlcpgx.UpdateBalanceReturningParams{Balance: 50, ID: 2})
	if err != nil || a.Balance != 50 || a.FenceToken != 7 || a.Version != 2 {
		t.Fatalf("UpdateBalanceReturning: %+v %v", a, err)
	}
	_, err = q.UpdateBalanceReturning(ctx, sqlcpgx.UpdateBalanceReturningParams{Balance: 1, ID: 2})
	wantErr(t, err, fencedsql.ErrFenced)
	if err := q.UpsertAccount(tok(e.ctx, 8), sqlcpgx.UpsertAccountParams{ID: 3, Owner: bob, Balance: 3}); err != nil {
		t.Fatal(err)
	}
	// In a transaction: WithTx takes the fenced pgx.Tx.
	tx, err := e.db.Begin(tok(e.ctx, 9))
	if err != nil {
		t.Fatal(err)
	}
	qtx := q.WithTx(tx)
	got, err := qtx.GetAccountForUpdate(e.ctx, 1)
	if err != nil || got.Balance != 105 {
		t.Fatalf("GetAccountForUpdate: %+v %v", got, err)
	}
	if err := qtx.DeleteAccount(e.ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	all, err := q.ListAccounts(e.ctx)
	if err != nil || len(all) != 2 || all[0].FenceToken != 9 {
		t.Fatalf("ListAccounts: %+v %v", all, err)
	}
	err = q.DeleteAccount(tok(e.ctx, 8), 1) // claimed by 9
	wantErr(t, err, fencedsql.ErrFenced)
	// :batchexec with a stale row in it: every result fails, nothing applied.
	var errs []error
	q.AddBalanceBatch(tok(e.ctx, 8), []sqlcpgx.AddBalanceBatchParams{{Balance: 1, ID: 2}, {Balance: 1, ID: 1}}).Exec(func(i int, err error) { errs = append(errs, err) })
	if len(errs) != 2 || !errors.Is(errs[1], fencedsql.ErrFenced) {
		t.Fatalf("batch errors: %v", errs)
	}
	if a, _ := q.GetAccount(e.ctx, 2); a.Balance != 50 {
		t.Fatalf("a failed batch applied: %+v", a)
	}
	errs = nil
	q.AddBalanceBatch(tok(e.ctx, 9), []sqlcpgx.AddBalanceBatchParams{{Balance: 1, ID: 2}, {Balance: 1, ID: 1}}).Exec(func(i int, err error) { errs = append(errs, err) })
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("batch: %v", errs)
	}
	// :copyfrom: refused into the guarded table, allowed elsewhere.
	_, err = q.CopyAccounts(ctx, []sqlcpgx.CopyAccountsParams{{ID: 10, Balance: 1}})
	wantErr(t, err, fencedsql.ErrUnsupported)
	if n, err := q.CopyAuditLog(e.ctx, []sqlcpgx.CopyAuditLogParams{{AccountID: 1}, {AccountID: 2}}); err != nil || n != 2 {
		t.Fatalf("CopyAuditLog: %d %v", n, err)
	}
	if _, err := q.GetAccount(e.ctx, 3); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("GetAccount of a deleted row: %v", err)
	}
}
