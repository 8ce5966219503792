package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testResolve (G13, guards match the object a statement resolves to): a guarded table
// reached under another name — a renamed schema, an ATTACH alias or main., another
// schema on the search_path, another database after USE, a name PostgreSQL truncates
// to the guarded one — is either fenced (a stale token gets ErrFenced and nothing
// changes) or refused with ErrSchema naming the table, never written unfenced. Each
// case first shows, through the plain driver, what the statement the wrapper used to
// send unchanged does: it changes the data.
func (s *guardSuite) testResolve(t *testing.T) {
	e := setup(t, s.b)
	switch s.b.Name {
	case "postgres":
		s.resolvePG(t, e)
	case "sqlite":
		s.resolveSQLite(t, e)
	default:
		s.resolveMySQL(t, e)
	}
}

// one returns a fenced pool of one connection (session statements apply to it).
func (e *env) one(t *testing.T, table string) *sql.DB {
	db := e.fencedOn(t, table)
	db.SetMaxOpenConns(1)
	return db
}

// unfencedChanges runs stmt through the plain driver in a transaction it rolls back
// and fails unless it changed a row: what the wrapper did with it before G13 (sent it
// as written).
func (e *env) unfencedChanges(t *testing.T, stmt string, args ...any) {
	t.Helper()
	tx, err := e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	res, err := tx.ExecContext(e.ctx, e.q(stmt), args...)
	if err != nil {
		t.Fatalf("the unfenced %q: %v", stmt, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("the unfenced %q changed %d rows, want 1 (the mistake would have written)", stmt, n)
	}
}

// wantFenced runs a stale write through db and wants ErrFenced, the row unchanged.
func (e *env) wantFenced(t *testing.T, db *sql.DB, stmt string, read func() int64) {
	t.Helper()
	before := read()
	_, err := db.ExecContext(tok(e.ctx, 10), e.q(stmt), 1)
	if !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("%q with a stale token: err = %v, want ErrFenced", stmt, err)
	}
	if after := read(); after != before {
		t.Fatalf("%q with a stale token changed balance %d → %d", stmt, before, after)
	}
}

// wantRefused runs a write through db and wants ErrSchema naming table.
func wantRefused(t *testing.T, ctx context.Context, db *sql.DB, stmt, table string, args ...any) {
	t.Helper()
	_, err := db.ExecContext(tok(ctx, 30), stmt, args...)
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), table) {
		t.Fatalf("%q: err = %v, want ErrSchema naming %s", stmt, err, table)
	}
}

func (e *env) balance(q string) func() int64 {
	return func() int64 {
		e.t.Helper()
		var b int64
		if err := e.raw.QueryRowContext(e.ctx, q).Scan(&b); err != nil {
			e.t.Fatal(err)
		}
		return b
	}
}

const nullableCols = "id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NULL, version BIGINT NULL"

func (s *guardSuite) resolvePG(t *testing.T, e *env) {
	// A schema renamed after the guard was configured.
	s.exec(e, "CREATE SCHEMA app", "CREATE TABLE app.accounts ("+cols+")")
	db := e.one(t, "app.accounts")
	if _, err := db.ExecContext(tok(e.ctx, 20), "INSERT INTO app.accounts (id, balance) VALUES ($1, 100)", 1); err != nil {
		t.Fatal(err)
	}
	s.exec(e, "ALTER SCHEMA app RENAME TO app2")
	e.unfencedChanges(t, "UPDATE app2.accounts SET balance = 7 WHERE id = ?", 1)
	e.wantFenced(t, db, "UPDATE app2.accounts SET balance = 7 WHERE id = $1", e.balance("SELECT balance FROM app2.accounts WHERE id = 1"))

	// Another schema on the search_path with a same-named table whose fencing columns
	// are nullable: the fencing NULL would be stored.
	e.seed(20, 1)
	s.exec(e, "CREATE SCHEMA other", "CREATE TABLE other.accounts ("+nullableCols+")", "INSERT INTO other.accounts VALUES (1, 100, 20, 1)")
	e.unfencedChanges(t, "UPDATE other.accounts SET balance = 7, fence_token = NULL WHERE id = ?", 1)
	pool := e.one(t, "accounts")
	e.wantFenced(t, pool, "UPDATE accounts SET balance = 7 WHERE id = $1", e.balance("SELECT balance FROM public.accounts WHERE id = 1"))
	wantRefused(t, e.ctx, pool, "UPDATE other.accounts SET balance = 7 WHERE id = $1", "other.accounts", 1)
	for _, set := range []string{"SET search_path TO other", "SELECT set_config('search_path', 'other', false)"} {
		if _, err := pool.ExecContext(e.ctx, "SET search_path TO public"); err != nil {
			t.Fatal(err)
		}
		e.wantFenced(t, pool, "UPDATE accounts SET balance = 7 WHERE id = $1", e.balance("SELECT balance FROM public.accounts WHERE id = 1"))
		if _, err := pool.ExecContext(e.ctx, set); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, e.ctx, pool, "UPDATE accounts SET balance = 7 WHERE id = $1", "accounts", 1)
	}
	if b := e.balance("SELECT balance FROM other.accounts WHERE id = 1")(); b != 100 {
		t.Fatalf("other.accounts balance = %d, want 100 (nothing written)", b)
	}

	// 63-byte identifiers: a longer name truncates to the guarded table's.
	n63 := "acc_" + strings.Repeat("x", 59)
	long := n63 + "_truncated_by_the_server"
	s.exec(e, "CREATE TABLE "+n63+" ("+cols+")")
	ldb := e.one(t, n63)
	if _, err := ldb.ExecContext(tok(e.ctx, 20), "INSERT INTO "+n63+" (id, balance) VALUES ($1, 100)", 1); err != nil {
		t.Fatal(err)
	}
	e.unfencedChanges(t, "UPDATE "+long+" SET balance = 7 WHERE id = ?", 1)
	e.wantFenced(t, ldb, "UPDATE "+long+" SET balance = 7 WHERE id = $1", e.balance("SELECT balance FROM "+n63+" WHERE id = 1"))
	e.wantFenced(t, ldb, "UPDATE public."+long+" SET balance = 7 WHERE id = $1", e.balance("SELECT balance FROM "+n63+" WHERE id = 1"))
	// A guarded name longer than 63 bytes is compared truncated.
	gl := e.one(t, long)
	e.wantFenced(t, gl, "UPDATE "+n63+" SET balance = 7 WHERE id = $1", e.balance("SELECT balance FROM "+n63+" WHERE id = 1"))
}

func (s *guardSuite) resolveSQLite(t *testing.T, e *env) {
	e.seed(20, 1)
	u, err := url.Parse(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	path := u.Opaque
	if path == "" {
		path = u.Path
	}
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	read := e.balance("SELECT balance FROM accounts WHERE id = 1")
	db := e.one(t, "accounts")
	// main. and the same file attached under another alias: the guarded table.
	e.unfencedChanges(t, "UPDATE main.accounts SET balance = 7 WHERE id = ?", 1)
	e.wantFenced(t, db, "UPDATE main.accounts SET balance = 7 WHERE id = ?", read)
	if _, err := db.ExecContext(e.ctx, "ATTACH DATABASE '"+strings.ReplaceAll(path, "'", "''")+"' AS aux"); err != nil {
		t.Fatal(err)
	}
	e.wantFenced(t, db, "UPDATE aux.accounts SET balance = 7 WHERE id = ?", read)
	e.wantFenced(t, db, "DELETE FROM aux.accounts WHERE id = ?", read)

	// Another database attached with a same-named table whose fencing columns are
	// nullable: refused.
	other := strings.TrimSuffix(path, ".sqlite") + "-other.sqlite"
	odb, err := sql.Open(e.b.RawName, "file:"+(&url.URL{Path: other}).EscapedPath())
	if err != nil {
		t.Fatal(err)
	}
	defer odb.Close()
	execAll(t, e.ctx, odb, []string{"CREATE TABLE accounts (" + nullableCols + ")", "INSERT INTO accounts VALUES (1, 100, 20, 1)"})
	if _, err := odb.ExecContext(e.ctx, "UPDATE accounts SET balance = 7, fence_token = NULL WHERE id = 1"); err != nil {
		t.Fatalf("the unfenced write on the attached table: %v", err)
	}
	if _, err := db.ExecContext(e.ctx, "ATTACH DATABASE '"+strings.ReplaceAll(other, "'", "''")+"' AS other"); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, e.ctx, db, "UPDATE other.accounts SET balance = 9 WHERE id = ?", "other.accounts", 1)
	e.wantFenced(t, db, "UPDATE accounts SET balance = 7 WHERE id = ?", read)
}

func (s *guardSuite) resolveMySQL(t *testing.T, e *env) {
	e.seed(20, 1)
	var cur string
	if err := e.raw.QueryRowContext(e.ctx, "SELECT DATABASE()").Scan(&cur); err != nil {
		t.Fatal(err)
	}
	other := cur + "_other"
	s.exec(e, "DROP DATABASE IF EXISTS "+other, "CREATE DATABASE "+other,
		"CREATE TABLE "+other+".accounts ("+nullableCols+") ENGINE=InnoDB", "INSERT INTO "+other+".accounts VALUES (1, 100, 20, 1)")
	t.Cleanup(func() { _, _ = e.raw.Exec("DROP DATABASE IF EXISTS " + other) })
	e.unfencedChanges(t, "UPDATE "+other+".accounts SET balance = 7, fence_token = NULL WHERE id = ?", 1)
	read := e.balance("SELECT balance FROM " + cur + ".accounts WHERE id = 1")
	db := e.one(t, "accounts")
	e.wantFenced(t, db, "UPDATE accounts SET balance = 7 WHERE id = ?", read)
	e.wantFenced(t, db, "UPDATE "+cur+".accounts SET balance = 7 WHERE id = ?", read)
	wantRefused(t, e.ctx, db, "UPDATE "+other+".accounts SET balance = 9 WHERE id = ?", other+".accounts", 1)
	if _, err := db.ExecContext(e.ctx, "USE "+other); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, e.ctx, db, "UPDATE accounts SET balance = 9 WHERE id = ?", "accounts", 1)
	if _, err := db.ExecContext(e.ctx, "USE "+cur); err != nil {
		t.Fatal(err)
	}
	e.wantFenced(t, db, "UPDATE accounts SET balance = 7 WHERE id = ?", read)
	if b := e.balance("SELECT balance FROM " + other + ".accounts WHERE id = 1")(); b != 100 {
		t.Fatalf("%s.accounts balance = %d, want 100 (nothing written)", other, b)
	}
}
