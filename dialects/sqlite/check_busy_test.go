package sqlite_test

// A busy SQLite database met by the wrapper's own check queries (another connection of
// the same file holds the write lock past the busy timeout) is a check that could not
// complete: a *CheckCutError wrapping the driver's SQLITE_BUSY, never ErrSchema with the
// go-sqlmock hint; nothing is sent, and the same pool checks again and writes once the
// lock is released (red-team rt65b F1).

import (
	"context"
	"errors"
	"strings"
	"testing"

	moderncsqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// busyEnv is a guarded accounts table (row 1 at token 50) in a fresh SQLite file, and
// that file's DSN with busy_timeout 0 (any timeout shorter than the other writer's
// transaction behaves alike).
func busyEnv(t *testing.T) (noWait string) {
	t.Helper()
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn,
		"CREATE TABLE accounts (id INTEGER NOT NULL PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)",
		"CREATE TABLE ledger (id INTEGER NOT NULL PRIMARY KEY, amount INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 50, 1)",
		"INSERT INTO ledger VALUES (1, 0)")
	raw.SetMaxOpenConns(1)
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	raw.Close()
	noWait = strings.Replace(dsn, "_pragma=busy_timeout(5000)", "_pragma=busy_timeout(0)", 1)
	if noWait == dsn {
		t.Fatalf("testdb.SQLite's DSN changed: %s", dsn)
	}
	return noWait
}

// lockFile begins an EXCLUSIVE transaction that wrote, on a plain connection to dsn, and
// returns the function that rolls it back.
func lockFile(t *testing.T, dsn string) (release func()) {
	t.Helper()
	ctx := context.Background()
	lc, err := testdb.Open(t, "sqlite", dsn).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	for _, q := range []string{"BEGIN EXCLUSIVE", "UPDATE ledger SET amount = amount + 1 WHERE id = 1"} {
		if _, err := lc.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if _, err := lc.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
}

// requireBusyNotSchema fails unless err is the driver's SQLITE_BUSY, not ErrSchema and
// without the mock hint, with outcome NotCommitted; with cut, it must be a
// *CheckCutError (a check query met the lock).
func requireBusyNotSchema(t *testing.T, what string, err error, cut bool) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s while another connection held the file's EXCLUSIVE lock succeeded", what)
	}
	var se *fencedsql.SchemaError
	if errors.Is(err, fencedsql.ErrSchema) || errors.As(err, &se) || strings.Contains(err.Error(), "mock driver") {
		t.Fatalf("%s while another connection held the file's lock: %v — ErrSchema (with the go-sqlmock hint): a busy database says nothing about the schema", what, err)
	}
	if cut && !errors.As(err, new(*fencedsql.CheckCutError)) {
		t.Errorf("%s: %v (%T), want a *CheckCutError (the check query could not complete)", what, err, err)
	}
	var de *moderncsqlite.Error
	if !errors.As(err, &de) || de.Code()&0xff != sqlite3.SQLITE_BUSY {
		t.Errorf("%s: %v does not wrap the driver's SQLITE_BUSY", what, err)
	}
	if o := fencedsql.CommitOutcome(err); o != fencedsql.NotCommitted {
		t.Errorf("%s: CommitOutcome %v, want NotCommitted", what, o)
	}
}

func balanceOf(t *testing.T, dsn string) int {
	t.Helper()
	var b int
	if err := testdb.Open(t, "sqlite", dsn).QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBusyDatabaseDuringFirstReadsIsCheckCut: a pool's first-connection reads (the
// registry, …) meet the lock, for a fresh-token UPDATE and for a plain read.
func TestBusyDatabaseDuringFirstReadsIsCheckCut(t *testing.T) {
	ctx := context.Background()
	noWait := busyEnv(t)
	release := lockFile(t, noWait)

	fdb := testdb.Open(t, "fenced-sqlite", noWait+"&fenced_tables=accounts")
	tctx := fencedsql.WithToken(ctx, 100)
	_, werr := fdb.ExecContext(tctx, "UPDATE accounts SET balance = 1 WHERE id = 1")
	var n int
	rerr := fdb.QueryRowContext(tctx, "SELECT count(*) FROM accounts").Scan(&n)
	release()

	requireBusyNotSchema(t, "a fresh-token UPDATE", werr, true)
	requireBusyNotSchema(t, "a plain SELECT", rerr, true)
	if b := balanceOf(t, noWait); b != 100 {
		t.Fatalf("balance %d after the refused UPDATE, want 100 (nothing sent)", b)
	}
	// The cut checks were not recorded: the same pool checks again and writes.
	if _, err := fdb.ExecContext(tctx, "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatalf("the pool did not recover after the lock was released: %v", err)
	}
	if err := fdb.QueryRowContext(tctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if b := balanceOf(t, noWait); b != 2 {
		t.Fatalf("balance %d, want 2", b)
	}
	// Still fenced: the checks that ran after the lock are the real ones.
	if _, err := fdb.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 3 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("a stale write after the recovery: %v, want ErrFenced", err)
	}
}

// TestBusyDatabaseDuringNewConnectionCheckIsCheckCut: on a pool that already wrote
// (its first-connection reads and the table's verdict done), a new connection's own
// checks (the durability session check) meet the lock.
func TestBusyDatabaseDuringNewConnectionCheckIsCheckCut(t *testing.T) {
	ctx := context.Background()
	noWait := busyEnv(t)
	fdb := testdb.Open(t, "fenced-sqlite", noWait+"&fenced_tables=accounts")
	tctx := fencedsql.WithToken(ctx, 100)
	first, err := fdb.Conn(tctx)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := first.ExecContext(tctx, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("warm-up write: %v", err)
	}

	release := lockFile(t, noWait)
	second, err := fdb.Conn(tctx) // a new connection: first is held
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	_, werr := second.ExecContext(tctx, "UPDATE accounts SET balance = 2 WHERE id = 1")
	release()

	// The session check may get through before the write meets the lock: then the
	// write's own SQLITE_BUSY, as the raw driver's; never ErrSchema.
	requireBusyNotSchema(t, "a fresh-token UPDATE on a new connection", werr, false)
	if b := balanceOf(t, noWait); b != 1 {
		t.Fatalf("balance %d after the refused UPDATE, want 1", b)
	}
	if _, err := second.ExecContext(tctx, "UPDATE accounts SET balance = 3 WHERE id = 1"); err != nil {
		t.Fatalf("the connection did not recover after the lock was released: %v", err)
	}
	if _, err := second.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 4 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("a stale write after the recovery: %v, want ErrFenced", err)
	}
}
