package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// lockingSetup creates a guarded, tombstoned accounts table in a fresh file through a
// plain pool and returns the file: URI (without parameters) and that pool.
func lockingSetup(t *testing.T) (string, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	base := "file:" + (&url.URL{Path: filepath.ToSlash(filepath.Join(t.TempDir(), "lock.sqlite"))}).EscapedPath()
	raw := testdb.Open(t, "sqlite", base+"?_pragma=busy_timeout(5000)")
	if _, err := raw.ExecContext(ctx, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	return base, raw
}

// openRefused opens dsn as a fenced pool and reports the error of its first use (nil
// when the pool works).
func openRefused(dsn string) error {
	db, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Ping()
}

// The SQLite dialect's guarantees rest on SQLite serialising writers. The URI
// parameter nolock (any value SQLite reads as true) and a VFS that takes no lock
// (vfs=unix-none, which modernc.org/sqlite also passes for a plain file name) turn the
// file locking off: two pools then write the file at once, each judging fences against
// the pages it cached (a red-team pass reproduced a stale UPDATE and a tombstoned key
// written again). The pool refuses such a DSN when it opens (a *ConfigError naming the
// parameter), by sql.Open and by OpenDB over DSNConnector; locking VFSes and false
// spellings of nolock open.
func TestDSNLockingOffRefused(t *testing.T) {
	base, _ := lockingSetup(t)
	plain, _ := url.PathUnescape(strings.TrimPrefix(base, "file:"))
	for _, c := range []struct{ dsn, param string }{
		{base + "?nolock=1", "nolock"},
		{base + "?nolock=yes", "nolock"},
		{base + "?nolock=TRUE", "nolock"},
		{base + "?nolock=On", "nolock"},
		{base + "?nolock=2", "nolock"},
		{base + "?nolock=1x", "nolock"},
		{base + "?n%6flock=1", "nolock"},
		{base + "?_pragma=busy_timeout(5000)&nolock=1&_pragma=journal_mode(wal)", "nolock"},
		{base + "?nolock=1&_pragma=journal_mode(truncate)", "nolock"},
		{base + "?vfs=unix-none", "vfs"},
		{base + "?v%66s=unix-none", "vfs"},
		{base + "?vfs=unix%2Dnone", "vfs"},
		{base + "?vfs=win32-none", "vfs"},
		{base + "?vfs=", "vfs"},
		{plain + "?vfs=unix-none", "vfs"},
		{plain + "?vfs=unix-none&_pragma=journal_mode(truncate)", "vfs"},
	} {
		for _, how := range []string{"sql.Open", "OpenDB"} {
			dsn := c.dsn + "&fenced_tables=accounts"
			var err error
			if how == "sql.Open" {
				err = openRefused(dsn)
			} else {
				db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, c.dsn), fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"))
				err = db.Ping()
				db.Close()
			}
			var ce *fencedsql.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.param+"=") {
				t.Errorf("%s %s: err = %v, want a *ConfigError naming %s=", how, c.dsn, err, c.param)
			}
		}
	}
	for _, p := range []string{"nolock=0", "nolock=off", "nolock=FALSE", "nolock=no", "nolock=", "vfs=unix", "vfs=unix-excl", "vfs=unix-dotfile", "_pragma=locking_mode(exclusive)"} {
		if err := openRefused(base + "?" + p + "&fenced_tables=accounts"); err != nil {
			t.Errorf("%s: %v, want the pool to open", p, err)
		}
	}
	if err := openRefused(plain + "?vfs=unix&fenced_tables=accounts"); err != nil {
		t.Errorf("plain path, vfs=unix: %v, want the pool to open", err)
	}
	// memdb locks (one writer at a time in the process): no DSN refusal (the empty
	// database then fails only because it has no accounts table).
	if err := openRefused("file:/locking_memdb?vfs=memdb&fenced_tables=accounts"); err != nil && strings.Contains(err.Error(), "vfs") {
		t.Errorf("vfs=memdb: %v, want no DSN refusal", err)
	}
}

// The stale UPDATE the red-team pass reproduced with nolock=1 (two pools on one file;
// the older holder's transaction read row 1, the newer holder updated and committed
// it, the older holder's fenced UPDATE judged its cached page and won): the DSN is now
// refused, and whatever the pools manage to do, the newer holder's write survives.
func TestDSNNoLockStaleUpdate(t *testing.T) {
	for _, params := range []string{"nolock=1&_pragma=journal_mode(truncate)", "vfs=unix-none&_pragma=journal_mode(truncate)"} {
		t.Run(params, func(t *testing.T) {
			base, raw := lockingSetup(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn := base + "?" + params + "&_pragma=busy_timeout(200)&fenced_tables=accounts"
			stale, err := sql.Open("fenced-sqlite", dsn)
			if err == nil {
				err = stale.PingContext(ctx)
				defer stale.Close()
			}
			var ce *fencedsql.ConfigError
			if errors.As(err, &ce) {
				return // refused when the pool opens
			}
			if err != nil {
				t.Fatal(err)
			}
			newer := testdb.Open(t, "fenced-sqlite", dsn)
			tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
			if _, err := newer.ExecContext(tok(5), "INSERT INTO accounts (id, balance) VALUES (1, 100)"); err != nil {
				t.Fatal(err)
			}
			tx, err := stale.BeginTx(tok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			var b int64
			if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&b); err != nil {
				t.Fatal(err)
			}
			_, errNewer := newer.ExecContext(tok(20), "UPDATE accounts SET balance = 200 WHERE id = 1")
			_, err1 := tx.ExecContext(ctx, "UPDATE accounts SET balance = 7 WHERE id = 1")
			var err2 error
			if err1 == nil {
				err2 = tx.Commit()
			}
			var bal, tk int64
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tk); err != nil {
				t.Fatal(err)
			}
			if errNewer == nil && (tk < 20 || bal != 200) {
				t.Fatalf("the pool opened with %s, and the stale holder's UPDATE (token 7) overwrote the newer holder's committed write (token 20): balance %d, token %d (stale update %v, commit %v)", params, bal, tk, err1, err2)
			}
		})
	}
}
