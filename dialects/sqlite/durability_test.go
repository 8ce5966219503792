// SQLite durability (docs/design.md G14): WAL with synchronous NORMAL, journal_mode OFF
// and synchronous OFF are refused wherever they arise — the DSN, the file's own
// persistent mode, a PRAGMA through the pool (red-team rt43b F2).

package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// durabilityFile creates a database file with a table accounts (row 1) and returns
// its path.
func durabilityFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path)
	if _, err := raw.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO accounts (id) VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	return path
}

// guardedWrite opens "fenced-sqlite" with the DSN and writes accounts' row 1 under
// token 10; it returns the error of Open, first use or the write.
func guardedWrite(t *testing.T, dsn string) error {
	t.Helper()
	db, err := sql.Open("fenced-sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		return err
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 100 WHERE id = 1")
	return err
}

// TestWALWithSynchronousNormalRefused: a DSN that sets WAL and synchronous NORMAL (each
// safe alone) is a *ConfigError, in every spelling; a file already in WAL mode opened
// with NORMAL is refused at the first guarded write (a *SessionError, ErrSchema).
func TestWALWithSynchronousNormalRefused(t *testing.T) {
	for _, c := range []struct{ name, pre, q string }{
		{"both pragmas in the DSN", "", "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"},
		{"both pragmas, numeric level", "", "&_pragma=journal_mode(wal)&_pragma=synchronous(1)"},
		{"NORMAL first", "", "&_pragma=synchronous=normal&_pragma=journal_mode=WAL"},
		{"modernc shorthands", "", "&_journal_mode=WAL&_synchronous=NORMAL"},
		{"shorthand and pragma mixed", "", "&_journal=wal&_pragma=main.synchronous(1)"},
		{"file already WAL, DSN sets NORMAL", "PRAGMA journal_mode=WAL", "&_pragma=synchronous(NORMAL)"},
		{"file already WAL, DSN sets 1", "PRAGMA journal_mode=WAL", "&_sync=1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := durabilityFile(t)
			if c.pre != "" {
				raw := testdb.Open(t, "sqlite", "file:"+path)
				if _, err := raw.Exec(c.pre); err != nil {
					t.Fatal(err)
				}
			}
			err := guardedWrite(t, "file:"+path+"?fenced_tables=accounts"+c.q)
			var ce *fencedsql.ConfigError
			var se *fencedsql.SessionError
			switch {
			case err == nil:
				t.Fatal("a guarded write was acknowledged on a WAL connection with synchronous NORMAL (a power loss may roll it back)")
			case c.pre == "" && !errors.As(err, &ce):
				t.Fatalf("err = %v, want a *ConfigError at Open (the DSN says both)", err)
			case c.pre != "" && (!errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema)):
				t.Fatalf("err = %v, want a *SessionError (ErrSchema)", err)
			case !strings.Contains(err.Error(), "NORMAL") && !strings.Contains(err.Error(), "normal"):
				t.Errorf("the refusal does not say why: %v", err)
			}
		})
	}
}

// TestDurableSQLiteSettingsOpen: the settings SQLite documents as durable open and
// write: modernc's defaults (DELETE, FULL), WAL with FULL or EXTRA (or the default
// level), NORMAL with a rollback journal, and a WAL file opened without a level.
func TestDurableSQLiteSettingsOpen(t *testing.T) {
	for _, c := range []struct{ name, pre, q string }{
		{"defaults", "", ""},
		{"WAL alone", "", "&_pragma=journal_mode(WAL)"},
		{"WAL with FULL", "", "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"},
		{"WAL with EXTRA", "", "&_journal_mode=WAL&_synchronous=3"},
		{"NORMAL with DELETE", "", "&_pragma=journal_mode(DELETE)&_pragma=synchronous(NORMAL)"},
		{"NORMAL alone on a DELETE file", "", "&_pragma=synchronous(NORMAL)"},
		{"NORMAL with TRUNCATE", "", "&_pragma=journal_mode(TRUNCATE)&_sync=1"},
		{"file already WAL, default level", "PRAGMA journal_mode=WAL", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := durabilityFile(t)
			if c.pre != "" {
				raw := testdb.Open(t, "sqlite", "file:"+path)
				if _, err := raw.Exec(c.pre); err != nil {
					t.Fatal(err)
				}
			}
			if err := guardedWrite(t, "file:"+path+"?fenced_tables=accounts"+c.q); err != nil {
				t.Fatalf("a durable setting refused: %v", err)
			}
		})
	}
}

// TestWALWithSynchronousNormalThroughPool: PRAGMA journal_mode=WAL and PRAGMA
// synchronous=NORMAL sent through the pool (in either order, in any spelling, before
// or after the connection's first guarded write) make its next guarded write refused
// (a *SessionError: the PRAGMA re-arms the session check); setting FULL back lets the
// connection write again.
func TestWALWithSynchronousNormalThroughPool(t *testing.T) {
	for _, c := range []struct {
		name  string
		first bool // a guarded write before the pragmas (the session check already ran)
		stmts []string
	}{
		{"WAL then NORMAL", false, []string{"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"}},
		{"NORMAL then WAL, after a write", true, []string{"PRAGMA synchronous = 1", "PRAGMA journal_mode = wal"}},
		{"schema-qualified, call form, after a write", true, []string{"pragma main.journal_mode(WAL)", "pragma SYNCHRONOUS(1)"}},
		{"main.synchronous = 1, after a write", true, []string{"PRAGMA journal_mode=WAL", "PRAGMA main.synchronous = 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := durabilityFile(t)
			db, err := sql.Open("fenced-sqlite", "file:"+path+"?fenced_tables=accounts")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			write := func() error {
				_, err := conn.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 100 WHERE id = 1")
				return err
			}
			if c.first {
				if err := write(); err != nil {
					t.Fatal(err)
				}
			}
			for _, s := range c.stmts {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			var se *fencedsql.SessionError
			if err := write(); !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("guarded write after %q: err = %v, want a *SessionError (ErrSchema)", c.stmts, err)
			}
			if _, err := conn.ExecContext(ctx, "PRAGMA synchronous=FULL"); err != nil {
				t.Fatal(err)
			}
			if err := write(); err != nil {
				t.Fatalf("guarded write after PRAGMA synchronous=FULL: %v", err)
			}
		})
	}
}

// TestSQLiteCheckSession: the session check's verdicts on the values its query
// returns (journal_mode, synchronous, schema per database file).
func TestSQLiteCheckSession(t *testing.T) {
	const us, rs = "\x1f", "\x1e"
	for _, c := range []struct {
		value string
		ok    bool
	}{
		{"", true}, // only temp and in-memory databases
		{"delete" + us + "2" + us + "main", true},
		{"wal" + us + "2" + us + "main", true},
		{"wal" + us + "3" + us + "main", true},
		{"delete" + us + "1" + us + "main", true},
		{"truncate" + us + "1" + us + "main" + rs + "wal" + us + "2" + us + "aux", true},
		{"wal" + us + "1" + us + "main", false},
		{"delete" + us + "2" + us + "main" + rs + "wal" + us + "1" + us + "aux", false},
		{"delete" + us + "0" + us + "main", false},
		{"off" + us + "2" + us + "main", false},
		{"wal 2 main", false}, // unreadable: refused
	} {
		err := sqlite.Dialect.CheckSession(c.value)
		var se *fencedsql.SessionError
		if c.ok != (err == nil) || !c.ok && !errors.As(err, &se) {
			t.Errorf("CheckSession(%q) = %v, want ok %v (else a *SessionError)", c.value, err, c.ok)
		}
	}
}
