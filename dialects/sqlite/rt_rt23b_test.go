package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRTrt23bRekeyUnderColumnCollation: the primary key's index compares with another
// collation than the key column's own (`name TEXT COLLATE NOCASE, PRIMARY KEY (name
// COLLATE BINARY)` or `… COLLATE RTRIM …`), so 'alice' and 'Alice' ('a' and 'a ') are
// two keys. schema.Check installs the guard and the tombstones (the tombstone table is
// keyed with the index's collation) and reports the table OK. A newer holder (token 10)
// deletes 'alice'. A stale holder (token 7) — through the fenced pool, or on a plain
// connection following the protocol — then moves the row 'Alice' onto 'alice' with a
// key-changing UPDATE. The tombstone's rekey trigger fires only WHEN `OLD.name IS NOT
// NEW.name`, which SQLite compares with the COLUMN's collation (NOCASE: equal), not the
// key's: it does not fire, so neither the check of the key the row moves onto nor the
// tombstone of the key it leaves is run, and the deleted key 'alice' is back under
// token 7.
//
// Right behaviour (G9 "No resurrection"): the key-changing UPDATE fails with
// ErrFenced and 'alice' stays deleted — the WHEN clause must compare with the key's
// collation (e.g. `OLD.name COLLATE BINARY IS NOT NEW.name` using the collation
// PrimaryKeyQuery read, or compare the values byte-wise), or schema.Check must refuse
// the declaration.
func TestRTrt23bRekeyUnderColumnCollation(t *testing.T) {
	for _, c := range []struct{ name, create, left, onto string }{
		{"NOCASE column, BINARY key, fenced", "CREATE TABLE accounts (name TEXT COLLATE NOCASE NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name COLLATE BINARY))", "Alice", "alice"},
		{"RTRIM column, BINARY key, fenced", "CREATE TABLE accounts (name TEXT COLLATE RTRIM NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name COLLATE BINARY))", "alice ", "alice"},
		{"NOCASE column, BINARY key, plain connection", "CREATE TABLE accounts (name TEXT COLLATE NOCASE NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name COLLATE BINARY))", "Alice", "alice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := testdb.SQLite(t)
			raw := testdb.Open(t, "sqlite", dsn)
			exec := func(stmts ...string) {
				t.Helper()
				for _, st := range stmts {
					if _, err := raw.ExecContext(ctx, st); err != nil {
						t.Fatalf("%v\n-- statement:\n%s", err, st)
					}
				}
			}
			exec(c.create)
			spec := schema.GuardSpec{Table: "accounts"}
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				exec(r.Fix...)
			}
			if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
				// Refusing the declaration would be a right answer too.
				t.Fatalf("schema.Check after Fix: %+v, %v", reps, err)
			}
			db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
			tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
			if _, err := db.ExecContext(tok(5), "INSERT INTO accounts (name, balance) VALUES (?, 1), (?, 2)", c.onto, c.left); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(tok(10), "DELETE FROM accounts WHERE name = ? COLLATE BINARY", c.onto); err != nil {
				t.Fatal(err)
			}
			// Control: a stale INSERT of the deleted key is refused.
			if _, err := db.ExecContext(tok(7), "INSERT INTO accounts (name, balance) VALUES (?, 3)", c.onto); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("control: stale INSERT of the deleted key: %v, want ErrFenced", err)
			}
			plain := strings.HasSuffix(c.name, "plain connection")
			if plain {
				_, err = raw.ExecContext(ctx, "UPDATE accounts SET name = ?, fence_token = 7, version = version + 1 WHERE name = ? COLLATE BINARY", c.onto, c.left)
			} else {
				_, err = db.ExecContext(tok(7), "UPDATE accounts SET name = ? WHERE name = ? COLLATE BINARY", c.onto, c.left)
			}
			var n int
			if qerr := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE name = ? COLLATE BINARY", c.onto).Scan(&n); qerr != nil {
				t.Fatal(qerr)
			}
			if n != 0 || err == nil || !plain && !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("stale (token 7) key-changing UPDATE %q -> %q, onto the key deleted under token 10: err = %v, rows with the deleted key = %d; want ErrFenced / a refusal and 0 rows", c.left, c.onto, err, n)
			}
		})
	}
}

// TestRTrt23bRekeyLeftKeyUnderColumnCollation: the other half of the same WHEN clause
// (see TestRTrt23bRekeyUnderColumnCollation). With `name TEXT COLLATE NOCASE,
// PRIMARY KEY (name COLLATE BINARY)`, a newer holder (token 10) moves its row from key
// 'alice' to key 'Alice' (two keys for the table). The tombstone's rekey trigger, which
// records the key a row leaves with the mover's token, does not fire (the column's
// NOCASE calls the two equal), so no tombstone of 'alice' is written, and a stale
// holder (token 7) re-creates 'alice' with a plain INSERT through the fenced pool.
//
// Right behaviour (G9, "records the key the row left"): the stale INSERT of 'alice'
// fails with ErrFenced, as it does after the newer holder moves 'alice' to 'bob'.
func TestRTrt23bRekeyLeftKeyUnderColumnCollation(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	if _, err := raw.ExecContext(ctx, "CREATE TABLE accounts (name TEXT COLLATE NOCASE NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name COLLATE BINARY))"); err != nil {
		t.Fatal(err)
	}
	spec := schema.GuardSpec{Table: "accounts"}
	fencetest.Guard(t, ctx, raw, sqlite.Dialect, spec)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("schema.Check after Fix: %+v, %v", reps, err)
	}
	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	if _, err := db.ExecContext(tok(5), "INSERT INTO accounts (name, balance) VALUES ('alice', 1), ('carol', 2)"); err != nil {
		t.Fatal(err)
	}
	// Control: a move to an unrelated key tombstones the key left.
	if _, err := db.ExecContext(tok(10), "UPDATE accounts SET name = 'bob' WHERE name = 'carol'"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(tok(7), "INSERT INTO accounts (name, balance) VALUES ('carol', 3)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("control: stale INSERT of the key left by a move to 'bob': %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(tok(10), "UPDATE accounts SET name = 'Alice' WHERE name = 'alice' COLLATE BINARY"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(tok(7), "INSERT INTO accounts (name, balance) VALUES ('alice', 666)")
	var n int
	if qerr := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE name = 'alice' COLLATE BINARY").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale (token 7) INSERT of 'alice', the key a token-10 move to 'Alice' left: err = %v, rows = %d; want ErrFenced and 0 rows", err, n)
	}
}

// TestRTrt23bRebuiltKeyCollationKeepsOldTombstoneKey: SQLite changes a column only by
// rebuilding the table (the "twelve-step" procedure: create new_accounts, copy, drop
// accounts, rename). Rebuilding accounts to make its key `name TEXT COLLATE NOCASE`
// drops the tombstone triggers with the old table; schema.Check notices the swap ("a
// table swap … left them on the old table or dropped them with it") and its Fix
// re-installs the triggers, but `CREATE TABLE IF NOT EXISTS` keeps the tombstone table
// keyed `name TEXT COLLATE "BINARY"`, and schema.Check then reports the table OK and
// tombstoned. A newer holder (token 10) deletes 'Alice'; the tombstone check compares
// `t.name = NEW.name` under the tombstone column's BINARY collation, so a stale holder
// (token 7) re-creates the same key (for the table, 'alice' is 'Alice': inserting
// 'ALICE' next to it fails on the UNIQUE key) through the fenced pool.
//
// Right behaviour (G9: "a tombstone matches a key exactly when the table's own unique
// index calls the two equal"): the stale INSERT fails with ErrFenced; schema.Check
// reports a tombstone table whose key columns' type or collation differ from the
// primary key's (as dialect.SideDoorTombstoneKey does on MySQL/MariaDB and PostgreSQL,
// red-team rt20g F5), with a Fix that rebuilds it.
func TestRTrt23bRebuiltKeyCollationKeepsOldTombstoneKey(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	exec := func(stmts ...string) { t.Helper(); testdb.Exec(t, raw, stmts...) }
	fix := func() bool { t.Helper(); return rt23bFixed(t, raw) }
	exec("CREATE TABLE accounts (name TEXT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	if !fix() {
		t.Fatal("first install not OK")
	}
	exec("CREATE TABLE new_accounts (name TEXT COLLATE NOCASE NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO new_accounts SELECT * FROM accounts", "DROP TABLE accounts", "ALTER TABLE new_accounts RENAME TO accounts")
	checkOK := fix()
	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	if _, err := db.ExecContext(tok(5), "INSERT INTO accounts (name, balance) VALUES ('Alice', 1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(tok(10), "DELETE FROM accounts WHERE name = 'Alice'"); err != nil {
		t.Fatal(err)
	}
	_, err := db.ExecContext(tok(7), "INSERT INTO accounts (name, balance) VALUES ('alice', 666)")
	var n int
	if qerr := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE name = 'Alice'").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the rebuild (schema.Check after Fix OK: %v), a stale (token 7) INSERT of 'alice', the key 'Alice' deleted under token 10: err = %v, rows with the key = %d; want ErrFenced and 0 rows", checkOK, err, n)
	}
}

// TestRTrt23bRebuiltKeyColumnsUntypedRefusal (over-refusal, untyped error): the same
// twelve-step rebuild, now widening the key from (id) to (region, id). schema.Check's
// Fix re-installs the tombstone triggers for the new key but keeps the tombstone table
// keyed (id), and schema.Check then reports the table OK and tombstoned. Every INSERT
// and DELETE through the fenced pool now fails with SQLite's raw "SQL logic error: no
// such column: t.region" / "table fencedsql_tomb_accounts has no column named region",
// which is none of the wrapper's typed errors.
//
// Right behaviour: schema.Check reports the tombstone table whose key is not the
// primary key (no statement fixes it: drop the tombstone table and re-install, as on
// MySQL/MariaDB), and the lazy check refuses the table with ErrSchema; correct writes
// are not refused with an untyped error by a set-up schema.Check called OK.
func TestRTrt23bRebuiltKeyColumnsUntypedRefusal(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	exec := func(stmts ...string) { t.Helper(); testdb.Exec(t, raw, stmts...) }
	fix := func() bool { t.Helper(); return rt23bFixed(t, raw) }
	exec("CREATE TABLE accounts (id INTEGER NOT NULL PRIMARY KEY, region TEXT NOT NULL DEFAULT 'eu', balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	if !fix() {
		t.Fatal("first install not OK")
	}
	exec("CREATE TABLE new_accounts (id INTEGER NOT NULL, region TEXT NOT NULL DEFAULT 'eu', balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (region, id))",
		"INSERT INTO new_accounts SELECT * FROM accounts", "DROP TABLE accounts", "ALTER TABLE new_accounts RENAME TO accounts")
	checkOK := fix()
	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id, region, balance) VALUES (1, 'eu', 1)")
	if checkOK || err != nil && !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("after widening the key by a rebuild: schema.Check after Fix OK = %v (want a reported tombstone key mismatch); a correct fenced INSERT: err = %v (want success, or ErrSchema)", checkOK, err)
	}
}

// rt23bFixed applies schema.Check's Fix for accounts on raw and reports whether the
// table is then OK and tombstoned.
func rt23bFixed(t *testing.T, raw *sql.DB) bool {
	t.Helper()
	ctx := context.Background()
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, raw, r.Fix...)
	}
	reps, err = schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	return reps[0].OK() && reps[0].Tombstoned
}
