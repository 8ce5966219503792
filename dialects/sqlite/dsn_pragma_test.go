package sqlite_test

import (
	"database/sql"
	"errors"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"

	msqlite "modernc.org/sqlite"
)

// modernc.org/sqlite runs every _pragma= of the DSN on each new connection, where the
// wrapper never sees the PRAGMA it refuses as a statement: journal_mode OFF (a ROLLBACK
// no longer undoes a refused fenced transaction), synchronous OFF (a crash forgets
// acknowledged writes) and writable_schema (a write of sqlite_schema drops the guards)
// are refused when the pool opens (a red-team pass); safe values open.
func TestDSNPragmasRefused(t *testing.T) {
	file := "file:" + t.TempDir() + "/p.db?_pragma=busy_timeout(5000)"
	raw := testdb.Open(t, "sqlite", file)
	if _, err := raw.Exec("CREATE TABLE acc (id INTEGER PRIMARY KEY, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	base := file + "&fenced_tables=acc&"
	for _, p := range []string{
		"_pragma=journal_mode(OFF)", "_pragma=journal_mode(off)", "_pragma=main.journal_mode(OFF)", "_pragma=journal_mode%28OFF%29",
		"_pragma=synchronous(OFF)", "_pragma=synchronous(0)", "_pragma=synchronous=off",
		"_pragma=writable_schema(1)", "_pragma=writable_schema(ON)", "_pragma=writable_schema('true')", "_PRAGMA=writable_schema(1)",
	} {
		db, err := sql.Open("fenced-sqlite", base+p)
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "_pragma=") {
			t.Errorf("%s: err = %v, want a *ConfigError naming the pragma", p, err)
		}
	}
	for _, p := range []string{"_pragma=journal_mode(WAL)", "_pragma=synchronous(NORMAL)", "_pragma=writable_schema(0)", "_pragma=foreign_keys(1)"} {
		db, err := sql.Open("fenced-sqlite", base+p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := db.Ping(); err != nil {
			t.Errorf("%s: ping: %v", p, err)
		}
		db.Close()
	}
}

// The same DSN check where a pool is built over DSNConnector instead of sql.Open with
// the fenced driver name (found on review: only sql.Open checked the DSN): the
// unsafe pragmas fail every use of the DB with a *ConfigError; a safe DSN opens.
func TestDSNPragmasRefusedOpenDB(t *testing.T) {
	file := "file:" + t.TempDir() + "/p.db?_pragma=busy_timeout(5000)"
	for _, p := range []string{"_pragma=journal_mode(OFF)", "_sync=0", "_pragma=writable_schema(1)"} {
		db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, file+"&"+p), fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("acc"))
		err := db.Ping()
		db.Close()
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "DSN") {
			t.Errorf("%s: err = %v, want a *ConfigError about the DSN", p, err)
		}
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(&msqlite.Driver{}, file+"&_pragma=journal_mode(WAL)"), fencedsql.WithDialect(sqlite.Dialect), fencedsql.WithDDL(true), fencedsql.Guard("acc"))
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Errorf("safe DSN: %v", err)
	}
}
