package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneKeyRebuiltWithTombstones: a key column rebuilt COLLATE NOCASE leaves
// the tombstone table keyed BINARY with its tombstones ('Bob' deleted under token 10,
// 'BOB' under 12). schema.Check reports the tombstone key door; its Fix rebuilds the
// tombstone table under the key's collation, merging the two into one tombstone at
// the greater token; then a stale INSERT of 'bob' (token 11) is refused and one at
// the deleting token passes. Before the Fix a pool refuses the table (ErrSchema).
func TestTombstoneKeyRebuiltWithTombstones(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	spec := schema.GuardSpec{Table: "accounts"}
	check := func() schema.TableReport {
		t.Helper()
		reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
		if err != nil {
			t.Fatal(err)
		}
		return reps[0]
	}
	testdb.Exec(t, raw, "CREATE TABLE accounts (name TEXT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw, check().Fix...)
	testdb.Exec(t, raw, "INSERT INTO accounts (name, fence_token, version) VALUES ('Bob', 10, 1), ('BOB', 12, 1)",
		"DELETE FROM accounts")
	testdb.Exec(t, raw, "CREATE TABLE new_accounts (name TEXT COLLATE NOCASE NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO new_accounts SELECT * FROM accounts", "DROP TABLE accounts", "ALTER TABLE new_accounts RENAME TO accounts")
	rep := check()
	var door *dialect.SideDoor
	for i, sd := range rep.SideDoors {
		if sd.Kind == dialect.SideDoorTombstoneKey {
			door = &rep.SideDoors[i]
		}
	}
	if door == nil || len(door.Fix) == 0 || !strings.Contains(door.Problem, "NOCASE") {
		t.Fatalf("report after the rebuild = %+v, want the tombstone key door with a Fix", rep)
	}
	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	if _, err := db.ExecContext(tok(11), "INSERT INTO accounts (name) VALUES ('bob')"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("pool before the Fix: %v, want ErrSchema", err)
	}
	testdb.Exec(t, raw, rep.Fix...)
	if rep := check(); !rep.OK() || !rep.Tombstoned {
		t.Fatalf("after the Fix: %+v", rep)
	}
	var n, tk int
	if err := raw.QueryRowContext(ctx, "SELECT count(*), max(fence_token) FROM fencedsql_tomb_accounts").Scan(&n, &tk); err != nil || n != 1 || tk != 12 {
		t.Fatalf("tombstones after the Fix: %d, greatest token %d (%v); want one at 12", n, tk, err)
	}
	db2 := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if _, err := db2.ExecContext(tok(11), "INSERT INTO accounts (name) VALUES ('bob')"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT of a key deleted under token 12: %v, want ErrFenced", err)
	}
	if _, err := db2.ExecContext(tok(12), "INSERT INTO accounts (name) VALUES ('bob')"); err != nil {
		t.Fatalf("INSERT at the deleting token: %v", err)
	}
}
