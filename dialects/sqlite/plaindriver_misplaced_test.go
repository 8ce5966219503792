package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestPlainDriverMisplacedParamRefused: the hook on modernc's own driver refuses text
// that reads as a parameter of this package glued into another parameter's value or
// after '#' (red-team rt43b F1), as it refuses one as a key: opened with
// sql.Open("sqlite", …) such a DSN would guard nothing.
func TestPlainDriverMisplacedParamRefused(t *testing.T) {
	dir := t.TempDir()
	for _, q := range []string{
		"?mode=rwc,fenced_tables=accounts",
		"?mode=rwc%26fenced_tables%3Daccounts",
		"?mode=rwc#fenced_tables=accounts",
		"?_pragma=fenced_tables(accounts)",
	} {
		db, err := sql.Open("sqlite", filepath.Join(dir, "t.db")+q)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Ping()
		db.Close()
		var ce *fencedsql.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err = %v, want a *ConfigError", q, err)
		}
	}
}
