package sqlite_test

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A parameter of this package where modernc does not read parameters — after a '?' in
// the first position (os.Getenv("DB")+"?fenced_tables=…" with the variable unset), or
// in a key cut short by a '?' in a directory name — is a *ConfigError at Open, and no
// file is created (red-team rt31d F3: modernc took it as a file name, and the pool
// guarded nothing).
func TestFencedParamWhereDriverReadsNoneRefused(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	for _, dsn := range []string{
		"?fenced_tables=accounts",
		"?_pragma=busy_timeout(5000)&fenced_tables=accounts",
		"?fence_tables=accounts",
		dir + "/a?b/app.db?fenced_tables=accounts",
	} {
		db, err := sql.Open("fenced-sqlite", dsn)
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("sql.Open(fenced-sqlite, %q): %v, want a *ConfigError", dsn, err)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, "*")); len(entries) != 0 {
		t.Fatalf("files created: %v", entries)
	}
}
