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
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
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
}

const cols = "id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"

// Postgres is the PostgreSQL backend (import dialects/postgres in the test).
func Postgres() Backend {
	return Backend{
		Name: "postgres", DriverName: "fenced-pgx", RawName: "pgx", DSN: testdb.Postgres, Numbered: true,
		TableDDL:  "CREATE TABLE accounts (" + cols + ")",
		Upsert:    "INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance",
		Returning: true,
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, b) })
	}
}

// A takes token 7 and pauses; B takes 8 and commits; A's late write is refused and B's
// work survives: a write never changes a row already written with a newer token, and it
// fails with ErrFenced instead of passing for a success (docs/design.md, G1 and G2).
func testStory(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(1, 42)
	upd := e.q("UPDATE accounts SET balance = ? WHERE id = ?")

	txA, err := e.db.BeginTx(tok(e.ctx, 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	var readA int64
	if err := txA.QueryRowContext(e.ctx, e.q("SELECT balance FROM accounts WHERE id = ?"), 42).Scan(&readA); err != nil {
		t.Fatal(err)
	}
	txA.Rollback() // A pauses (its lease expires); nothing held

	txB, err := e.db.BeginTx(tok(e.ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txB.ExecContext(e.ctx, upd, readA-30, 42); err != nil {
		t.Fatalf("B's write: %v", err)
	}
	if err := txB.Commit(); err != nil {
		t.Fatal(err)
	}

	txA2, err := e.db.BeginTx(tok(e.ctx, 7), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := txA2.ExecContext(e.ctx, upd, readA-10, 42)
	if res != nil {
		t.Fatalf("fenced write returned a result")
	}
	wantErr(t, err, fencedsql.ErrFenced)
	var fe *fencedsql.FencedError
	if !errors.As(err, &fe) || fe.Table != "accounts" || fe.Token != 7 {
		t.Fatalf("FencedError = %+v", fe)
	}
	if strings.Contains(err.Error(), strconv.FormatInt(readA-10, 10)) {
		t.Fatalf("error message leaks row data: %v", err)
	}
	txA2.Rollback()
	if r := e.row(42); r.balance != readA-30 || r.token != 8 {
		t.Fatalf("row after late write = %+v, want B's balance %d with token 8", r, readA-30)
	}
}

func testInsert(t *testing.T, b Backend) {
	e := setup(t, b)
	if _, err := e.db.ExecContext(tok(e.ctx, 5), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?), (?, ?)"), 1, 10, 2, 20); err != nil {
		t.Fatal(err)
	}
	for id, bal := range map[int64]int64{1: 10, 2: 20} {
		if r := e.row(id); r != (row{bal, 5, 1}) {
			t.Fatalf("row %d = %+v, want balance %d, token 5, version 1", id, r, bal)
		}
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 6), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r != (row{11, 6, 2}) {
		t.Fatalf("after UPDATE row = %+v, want token 6 version 2", r)
	}
}

// A statement over several rows where one row is newer fails whole: it does not update
// the other rows and skip the newer one (docs/design.md, G2).
func testMultiRow(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1, 2, 3)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = balance WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	res, err := e.db.ExecContext(tok(e.ctx, 7), "UPDATE accounts SET balance = balance + 1")
	wantErr(t, err, fencedsql.ErrFenced)
	if res != nil {
		t.Fatal("result returned for a fenced statement")
	}
	for _, id := range []int64{1, 3} {
		if r := e.row(id); r.balance != 100 || r.token != 5 {
			t.Fatalf("unfenced row %d was changed by a failed statement: %+v", id, r)
		}
	}
	// The same statement with the newest token applies to all rows.
	if _, err := e.db.ExecContext(tok(e.ctx, 9), "UPDATE accounts SET balance = balance + 1"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2, 3} {
		if r := e.row(id); r.balance != 101 || r.token != 9 {
			t.Fatalf("row %d = %+v", id, r)
		}
	}
}

func testEqualToken(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(7, 1)
	for i := range 3 {
		if _, err := e.db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?"), 1); err != nil {
			t.Fatalf("write %d with the same token: %v", i, err)
		}
	}
	if r := e.row(1); r != (row{103, 7, 4}) {
		t.Fatalf("row = %+v, want balance 103 token 7 version 4", r)
	}
}

func testStrict(t *testing.T, b Backend) {
	e := setup(t, b, "fenced_strict=true")
	e.seed(7, 1)
	_, err := e.db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 8), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1); err != nil {
		t.Fatalf("strictly greater token refused: %v", err)
	}
	if r := e.row(1); r.balance != 1 || r.token != 8 {
		t.Fatalf("row = %+v", r)
	}
}

func testDelete(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1, 2, 3)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.ExecContext(tok(e.ctx, 7), e.q("DELETE FROM accounts WHERE id = ? OR id = ?"), 1, 2)
	wantErr(t, err, fencedsql.ErrFenced)
	if n := e.count(); n != 3 {
		t.Fatalf("fenced DELETE removed rows: %d left", n)
	}
	if r := e.row(1); r.token != 5 {
		t.Fatalf("fenced DELETE changed row 1: %+v", r)
	}
	res, err := e.db.ExecContext(tok(e.ctx, 9), e.q("DELETE FROM accounts WHERE id = ? OR id = ?"), 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("RowsAffected = %d, want 2", n)
	}
	// Inside a caller's transaction too.
	tx, _ := e.db.BeginTx(tok(e.ctx, 8), nil)
	_, err = tx.ExecContext(e.ctx, "DELETE FROM accounts")
	if err != nil {
		t.Fatalf("DELETE of a row with an older token: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d rows left", n)
	}
}

func testUpsert(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(8, 1)
	up := e.q(b.Upsert)
	_, err := e.db.ExecContext(tok(e.ctx, 7), up, 1, 555)
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 100 || r.token != 8 {
		t.Fatalf("fenced upsert changed the row: %+v", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 9), up, 1, 555); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r != (row{555, 9, 2}) {
		t.Fatalf("upsert row = %+v, want 555/9/2", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 3), up, 2, 1); err != nil {
		t.Fatalf("upsert inserting a new row: %v", err)
	}
	if r := e.row(2); r != (row{1, 3, 1}) {
		t.Fatalf("inserted row = %+v", r)
	}
}

func testVersion(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	v := e.row(1).version
	if _, err := e.db.ExecContext(tok(e.ctx, 5), e.q("UPDATE accounts SET balance = 7 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	upd := e.q("UPDATE accounts SET balance = 0 WHERE id = ?")
	_, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 6), v), upd, 1)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	if errors.Is(err, fencedsql.ErrFenced) {
		t.Fatal("version conflict reported as fenced")
	}
	if r := e.row(1); r.balance != 7 {
		t.Fatalf("conflicting write applied: %+v", r)
	}
	// Stale token and stale version: the token wins.
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 4), v), upd, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	// Not found is not a conflict.
	res, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 6), v), upd, 999)
	if err != nil {
		t.Fatalf("missing row: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("RowsAffected = %d", n)
	}
	// The current version succeeds and advances it.
	cur := e.row(1).version
	if _, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 6), cur), upd, 1); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r.version != cur+1 || r.balance != 0 {
		t.Fatalf("row = %+v", r)
	}
}

func testNoToken(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	for _, ctx := range []context.Context{e.ctx, tok(e.ctx, 0), fencedsql.WithLease(e.ctx, nil)} {
		_, err := e.db.ExecContext(ctx, e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 1)
		wantErr(t, err, fencedsql.ErrNoToken)
	}
	_, err := e.db.ExecContext(e.ctx, e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 2, 1)
	wantErr(t, err, fencedsql.ErrNoToken)
	if r := e.row(1); r.balance != 100 || e.count() != 1 {
		t.Fatal("tokenless write changed data")
	}
	// Reads and writes to other tables need no token.
	if _, err := e.db.ExecContext(e.ctx, "CREATE TABLE other (id INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(e.ctx, "INSERT INTO other (id) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
}

func testUnsupported(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	for _, s := range []string{
		"UPDATE accounts SET (balance, fence_token) = (0, 1000)",
		"INSERT INTO accounts SELECT * FROM accounts",
		"UPDATE accounts SET balance = 1; UPDATE accounts SET balance = 2",
	} {
		_, err := e.db.ExecContext(tok(e.ctx, 5), s)
		wantErr(t, err, fencedsql.ErrUnsupported)
	}
	if r := e.row(1); r != (row{100, 5, 1}) || e.count() != 1 {
		t.Fatalf("refused statements changed data: %+v", r)
	}
}

// A statement that assigns the fencing columns itself (an ORM model that maps them) is
// fenced with the wrapper's own values in their place: the caller can neither lower the
// token nor choose the version.
func testMappedColumnsReplaced(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	if _, err := e.db.ExecContext(tok(e.ctx, 6), "UPDATE accounts SET balance = 50, fence_token = 1, version = 999 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if r := e.row(1); r != (row{50, 6, 2}) {
		t.Fatalf("after a mapped UPDATE with token 6: %+v, want balance 50, token 6, version 2", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 6), "INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 7, 99999, 77)"); err != nil {
		t.Fatal(err)
	}
	if r := e.row(2); r != (row{7, 6, 1}) {
		t.Fatalf("after a mapped INSERT with token 6: %+v, want balance 7, token 6, version 1", r)
	}
	_, err := e.db.ExecContext(tok(e.ctx, 5), "UPDATE accounts SET balance = 0, fence_token = 1000 WHERE id = 1")
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r != (row{50, 6, 2}) {
		t.Fatalf("a stale mapped UPDATE changed the row: %+v", r)
	}
}

func testDuplicate(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	_, err := e.db.ExecContext(tok(e.ctx, 6), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 1, 1)
	wantErr(t, err, fencedsql.ErrDuplicate)
	var de *fencedsql.DuplicateError
	if !errors.As(err, &de) || de.Constraint == "" {
		t.Fatalf("DuplicateError = %+v, want a constraint name", de)
	}
}

// One prepared statement serves transactions with different tokens: the token is a bind
// parameter, not part of the SQL text (docs/design.md, G5).
func testPrepared(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(1, 1)
	st, err := e.db.PrepareContext(e.ctx, e.q("UPDATE accounts SET balance = balance + ? WHERE id = ?"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tk := range []uint64{7, 8} {
		tx, err := e.db.BeginTx(tok(e.ctx, tk), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.StmtContext(e.ctx, st).ExecContext(e.ctx, 1, 1); err != nil {
			t.Fatalf("token %d: %v", tk, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if r := e.row(1); r.token != int64(tk) {
			t.Fatalf("token %d: row = %+v", tk, r)
		}
	}
	_, err = st.ExecContext(tok(e.ctx, 7), 1, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 102 {
		t.Fatalf("balance = %d, want 102", r.balance)
	}
}

type fakeLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *fakeLease) Token() uint64         { return l.tok }
func (l *fakeLease) Lost() <-chan struct{} { return l.lost }
func (l *fakeLease) Err() error {
	select {
	case <-l.lost:
		return fmt.Errorf("test: %w", lockclient.ErrLeaseLost)
	default:
		return nil
	}
}

func testLeaseLost(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	l := &fakeLease{tok: 7, lost: make(chan struct{})}
	tx, err := e.db.BeginTx(fencedsql.WithLease(e.ctx, l), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	close(l.lost)
	err = tx.Commit()
	wantErr(t, err, lockclient.ErrLeaseLost)
	if r := e.row(1); r.balance != 100 || r.token != 5 {
		t.Fatalf("write of a lost lease committed: %+v", r)
	}
}

// Real connections race on one row with increasing tokens: the row ends with the
// largest token that succeeded and the balance counts exactly the successes.
func testRace(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(1, 1)
	if b.Name == "sqlite" {
		e.db.SetMaxOpenConns(1) // one writer at a time; the race is between statements
	}
	var mu sync.Mutex
	var wins []uint64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				tk := uint64(2 + i*4 + w)
				tx, err := e.db.BeginTx(tok(e.ctx, tk), nil)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = tx.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?"), 1)
				if err == nil {
					err = tx.Commit()
				} else {
					tx.Rollback()
				}
				switch {
				case err == nil:
					mu.Lock()
					wins = append(wins, tk)
					mu.Unlock()
				case errors.Is(err, fencedsql.ErrFenced):
				case b.MySQL && strings.Contains(err.Error(), "Deadlock"):
				case strings.Contains(err.Error(), "could not serialize"):
				default:
					t.Errorf("token %d: %v", tk, err)
				}
			}
		}()
	}
	wg.Wait()
	var maxWin uint64
	for _, w := range wins {
		maxWin = max(maxWin, w)
	}
	r := e.row(1)
	if r.balance != 100+int64(len(wins)) || r.token != int64(maxWin) {
		t.Fatalf("row = %+v after %d successful writes (max token %d)", r, len(wins), maxWin)
	}
}

func testSchema(t *testing.T, b Backend) {
	e := setup(t, b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(b.DriverName, WithParam(e.dsn, "fenced_tables=ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.ExecContext(tok(e.ctx, 1), e.q("INSERT INTO ledger (id, amount) VALUES (?, ?)"), 1, 1)
	wantErr(t, err, fencedsql.ErrSchema)
	if !strings.Contains(err.Error(), "ledger") || !strings.Contains(err.Error(), "ADD COLUMN") {
		t.Fatalf("schema error does not name the table and the fix: %v", err)
	}
	var n int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM ledger").Scan(&n); err != nil || n != 0 {
		t.Fatalf("refused write changed data: %d rows, %v", n, err)
	}
}

func testSqlx(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	db, err := sqlx.Open(b.DriverName, WithParam(e.dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := "UPDATE accounts SET balance = ? WHERE id = ?"
	if b.Numbered {
		want = "UPDATE accounts SET balance = $1 WHERE id = $2"
	}
	if got := db.Rebind("UPDATE accounts SET balance = ? WHERE id = ?"); got != want {
		t.Fatalf("Rebind = %q, want %q", got, want)
	}
	_, err = db.NamedExecContext(tok(e.ctx, 6), "UPDATE accounts SET balance = :balance WHERE id = :id", map[string]any{"balance": 77, "id": 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.NamedExecContext(tok(e.ctx, 5), "UPDATE accounts SET balance = :balance WHERE id = :id", map[string]any{"balance": 1, "id": 1})
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 77 || r.token != 6 {
		t.Fatalf("row = %+v", r)
	}
}

func testReturning(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(5, 1)
	var bal int64
	err := e.db.QueryRowContext(tok(e.ctx, 6), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ? RETURNING balance"), 1).Scan(&bal)
	if err != nil || bal != 101 {
		t.Fatalf("RETURNING = %d, %v", bal, err)
	}
	err = e.db.QueryRowContext(tok(e.ctx, 5), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ? RETURNING balance"), 1).Scan(&bal)
	wantErr(t, err, fencedsql.ErrFenced)
}

// A non-strict MySQL session turns the fencing NULL into 0, so the wrapper refuses it.
func testNonStrictMySQL(t *testing.T, b Backend) {
	e := setup(t, b)
	e.seed(9, 1)
	// Proof of the danger on the raw driver: in a non-strict session the NULL is
	// stored as 0 and the stale write applies.
	conn, err := e.raw.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(e.ctx, "SET SESSION sql_mode = ''"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(e.ctx, "UPDATE accounts SET balance = 1, fence_token = CASE WHEN fence_token <= 7 THEN 7 ELSE NULL END WHERE id = 1"); err != nil {
		t.Fatalf("non-strict raw update: %v", err)
	}
	if r := e.row(1); r.token != 0 || r.balance != 1 {
		t.Fatalf("expected MySQL to store 0 in a non-strict session, row = %+v", r)
	}

	fconn, err := e.db.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fconn.Close()
	if _, err := fconn.ExecContext(e.ctx, "SET SESSION sql_mode = ''"); err != nil {
		t.Fatal(err)
	}
	_, err = fconn.ExecContext(tok(e.ctx, 7), "UPDATE accounts SET balance = 2 WHERE id = 1")
	wantErr(t, err, fencedsql.ErrSchema)
	if r := e.row(1); r.balance != 1 {
		t.Fatalf("write in a non-strict session applied: %+v", r)
	}
}
