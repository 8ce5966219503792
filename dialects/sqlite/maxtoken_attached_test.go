package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// MaxToken of a table of an ATTACHed database, named with its alias (the workaround
// for rt40c F1), reads that database's tombstone tables and floor table, which the
// table's guards keep and read: the token of a row deleted there, and the floor − 1
// raised through a connection whose main database is that file (red-team rt42c F3).
func TestMaxTokenAttachedTableReadsItsTombstonesAndFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	auxFile := filepath.ToSlash(filepath.Join(dir, "aux.db"))
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(dir, "m.db")))
	raw.SetMaxOpenConns(1) // ATTACH is per connection
	const accounts = " (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token INTEGER NOT NULL DEFAULT 0, version INTEGER NOT NULL DEFAULT 0)"
	testdb.Exec(t, raw, "ATTACH DATABASE '"+auxFile+"' AS aux", "CREATE TABLE aux.accounts"+accounts)
	spec := schema.GuardSpec{Table: "aux.accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, raw, r.Fix...)
	}
	// Row 1 written under 10, then deleted by the holder of token 500 (its tombstone
	// keeps 500); row 2 written under 20.
	testdb.Exec(t, raw,
		"INSERT INTO aux.accounts (id, fence_token, version) VALUES (1, 10, 1), (2, 20, 1)",
		"UPDATE aux.accounts SET fence_token = 500, version = version + 1 WHERE id = 1",
		"DELETE FROM aux.accounts WHERE id = 1")
	if m, err := schema.MaxToken(ctx, raw, sqlite.Dialect, spec); err != nil || m != 500 {
		t.Errorf("MaxToken(aux.accounts) = %d, %v; the row deleted under token 500 is in aux.fencedsql_tomb_accounts: want 500", m, err)
	}
	auxDB := testdb.Open(t, "sqlite", "file:"+auxFile)
	if err := schema.RaiseTokenFloor(ctx, auxDB, sqlite.Dialect, 2000); err != nil {
		t.Fatal(err)
	}
	auxDB.Close()
	if m, err := schema.MaxToken(ctx, raw, sqlite.Dialect, spec); err != nil || m != 1999 {
		t.Errorf("MaxToken(aux.accounts) = %d, %v; aux.accounts' guards hold to aux's floor 2000: want 1999 (the floor − 1)", m, err)
	}
}
