package sqlite_test

import (
	"database/sql"
	"strings"
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/sqlite"
)

// A red-team pass: modernc.org/sqlite v1.62 sets journal_mode and synchronous from its own
// shorthand keys (_journal_mode, _journal, _synchronous, _sync), runs _pragma values
// verbatim (comments, quoted names, trailing ';'), and SQLite reads journal_mode by
// prefix ("of" is OFF), synchronous "no"/"false"/"00" as OFF and writable_schema "2"
// as on. Each DSN below sets an unsafe value on every connection (checked on a raw
// pool); the fenced pool must refuse to open.
func TestDSNUnsafeSettingsOpen(t *testing.T) {
	file := "file:" + t.TempDir() + "/p.db?_pragma=busy_timeout(5000)"
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("CREATE TABLE acc (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ p, pragma, unsafe string }{
		{"_journal_mode=OFF", "journal_mode", "off"},
		{"_journal=off", "journal_mode", "off"},
		{"_synchronous=OFF", "synchronous", "0"},
		{"_sync=0", "synchronous", "0"},
		{"_pragma=journal_mode(of)", "journal_mode", "off"},
		{"_pragma=journal_mode=o", "journal_mode", "off"},
		{"_pragma=synchronous(no)", "synchronous", "0"},
		{"_pragma=synchronous(false)", "synchronous", "0"},
		{"_pragma=synchronous(00)", "synchronous", "0"},
		{"_pragma=writable_schema(2)", "writable_schema", "1"},
		{"_pragma=writable_schema(01)", "writable_schema", "1"},
		{"_pragma=journal_mode/**/=off", "journal_mode", "off"},
		{"_pragma=%22journal_mode%22=off", "journal_mode", "off"},
		{"_pragma=writable_schema=on%3B", "writable_schema", "1"},
		{"_pragma=synchronous=off%20--x", "synchronous", "0"},
	}
	for _, c := range cases {
		// The setting takes effect on the raw driver.
		r, err := sql.Open("sqlite", file+"&"+c.p)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := r.QueryRow("PRAGMA " + c.pragma).Scan(&got); err != nil {
			t.Logf("%s: raw driver: %v (skipped)", c.p, err)
			r.Close()
			continue
		}
		r.Close()
		if !strings.EqualFold(got, c.unsafe) {
			t.Logf("%s: raw driver reads %s=%s (not unsafe, skipped)", c.p, c.pragma, got)
			continue
		}
		db, err := sql.Open("fenced-sqlite", file+"&fenced_tables=acc&"+c.p)
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		if err == nil {
			t.Errorf("%s: fenced pool opened, %s=%s on every connection", c.p, c.pragma, got)
		}
	}
	// journal_mode is persistent in the file for WAL only; reset for safety.
	raw.Exec("PRAGMA journal_mode=DELETE")
}
