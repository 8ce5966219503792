package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRekeyUnderColumnCollationRecordsTombstone: the primary key's index compares with another
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
func TestRekeyUnderColumnCollationRecordsTombstone(t *testing.T) {
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

// TestRekeyLeftKeyUnderColumnCollationRecordsTombstone: the other half of the same WHEN clause
// (see TestRekeyUnderColumnCollationRecordsTombstone). With `name TEXT COLLATE NOCASE,
// PRIMARY KEY (name COLLATE BINARY)`, a newer holder (token 10) moves its row from key
// 'alice' to key 'Alice' (two keys for the table). The tombstone's rekey trigger, which
// records the key a row leaves with the mover's token, does not fire (the column's
// NOCASE calls the two equal), so no tombstone of 'alice' is written, and a stale
// holder (token 7) re-creates 'alice' with a plain INSERT through the fenced pool.
//
// Right behaviour (G9, "records the key the row left"): the stale INSERT of 'alice'
// fails with ErrFenced, as it does after the newer holder moves 'alice' to 'bob'.
func TestRekeyLeftKeyUnderColumnCollationRecordsTombstone(t *testing.T) {
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

// TestRebuiltKeyCollationRebuildsTombstoneKey: SQLite changes a column only by
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
func TestRebuiltKeyCollationRebuildsTombstoneKey(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	exec := func(stmts ...string) { t.Helper(); testdb.Exec(t, raw, stmts...) }
	fix := func() bool { t.Helper(); return tombKeyFixed(t, raw) }
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

// TestRebuiltKeyColumnsReportedAsTombstoneKeyDoor (over-refusal, untyped error): the same
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
func TestRebuiltKeyColumnsReportedAsTombstoneKeyDoor(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	exec := func(stmts ...string) { t.Helper(); testdb.Exec(t, raw, stmts...) }
	fix := func() bool { t.Helper(); return tombKeyFixed(t, raw) }
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

// tombKeyFixed applies schema.Check's Fix for accounts on raw and reports whether the
// table is then OK and tombstoned.
func tombKeyFixed(t *testing.T, raw *sql.DB) bool {
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

// TestTombstoneTableColumnCollationChecked: the tombstone key door
// (tombstoneKey) reads the tombstone table's key through PrimaryKeyQuery, i.e. the
// collation of its primary key's index, and treats a tombstone table without a primary
// key as no tombstone table. But the tombstone guard's checks (the ins/key triggers'
// "t.<key> = NEW.<key>") compare under the tombstone table's COLUMN collation, with no
// COLLATE of their own. A tombstone table re-created (e.g. by a migration tool)
//
//	(a) with a BINARY column and PRIMARY KEY (name COLLATE NOCASE), or
//	(b) as a rowid table with name TEXT UNIQUE and no primary key,
//
// on a table whose key is name TEXT COLLATE NOCASE: schema.Check reports OK (no door,
// the triggers' text as this version writes it, the tombstone table present), the
// pool's lazy check passes, and after 'Bob' is deleted under token 12 a stale INSERT of
// 'bob' under token 11 goes through the fenced pool (the tombstone 'Bob' is not found
// under BINARY).
// Right: the door compares what the checks use — the tombstone table's column
// collations (and its having the key as its primary key) — or the triggers carry the
// key's COLLATE on "t.<key> = NEW.<key>" as well; the stale INSERT fails (ErrSchema or
// ErrFenced).
func TestTombstoneTableColumnCollationChecked(t *testing.T) {
	ctx := context.Background()
	for name, tomb := range map[string]string{
		"pk index NOCASE, column BINARY": "CREATE TABLE fencedsql_tomb_accounts (name TEXT NOT NULL, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL, PRIMARY KEY (name COLLATE NOCASE)) WITHOUT ROWID",
		"no primary key, UNIQUE":         "CREATE TABLE fencedsql_tomb_accounts (name TEXT NOT NULL UNIQUE, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL)",
	} {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.SQLite(t)
			raw := testdb.Open(t, "sqlite", dsn)
			testdb.Exec(t, raw, "CREATE TABLE accounts (name TEXT COLLATE NOCASE NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, reps[0].Fix...)
			testdb.Exec(t, raw, "DROP TABLE fencedsql_tomb_accounts", tomb, "INSERT INTO accounts (name, fence_token, version) VALUES ('Bob', 10, 1)")
			reps, err = schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 12), "DELETE FROM accounts WHERE name = 'Bob'"); err != nil {
				if errors.Is(err, fencedsql.ErrSchema) && !reps[0].OK() {
					return // the tombstone table refused as a door: right
				}
				t.Fatalf("DELETE under token 12: %v (schema.Check OK=%v)", err, reps[0].OK())
			}
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 11), "INSERT INTO accounts (name) VALUES ('bob')")
			if err == nil {
				t.Fatalf("stale INSERT of 'bob' (token 11) after 'Bob' deleted under token 12 succeeded; schema.Check OK=%v doors=%+v; want a tombstone key door and the INSERT refused", reps[0].OK(), reps[0].SideDoors)
			}
		})
	}
}

// TestNullKeyRowDeletableOrReported (over-refusal, untyped error): SQLite lets a
// non-INTEGER PRIMARY KEY of a rowid table hold NULL (its documented legacy quirk)
// unless the column is declared NOT NULL. schema.Check reports "name TEXT PRIMARY KEY"
// OK and installs the tombstone guard, whose tombstone table declares the key NOT
// NULL. A row with a NULL key then cannot be deleted (nor its key changed) through the
// fenced pool by the current holder: the AFTER DELETE trigger's tombstone INSERT fails
// with SQLite's raw "NOT NULL constraint failed: fencedsql_tomb_accounts.name", which
// is neither ErrFenced nor ErrSchema.
// Right: either schema.Check reports the nullable key column (a problem with the table
// to rebuild, and the pool refuses it with ErrSchema), or the triggers skip a NULL key
// (NULLs never collide, there is nothing to tombstone) and the DELETE succeeds.
func TestNullKeyRowDeletableOrReported(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	testdb.Exec(t, raw, "CREATE TABLE accounts (name TEXT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err = schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() {
		return // reported: the right behaviour
	}
	testdb.Exec(t, raw, "INSERT INTO accounts (name, fence_token, version) VALUES (NULL, 10, 1)")
	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 12), "DELETE FROM accounts WHERE name IS NULL")
	if err != nil && !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("DELETE under the newest token of a NULL-key row, schema.Check OK: %v (ErrFenced=%v); want success, or the nullable key reported by schema.Check and ErrSchema", err, errors.Is(err, fencedsql.ErrFenced))
	}
}

// TestTombKeyFixAfterNarrowedCollationKeepsTombstones: the tombstone key door's Fix after a key
// column is rebuilt from COLLATE NOCASE to BINARY. Under NOCASE, 'Bob' (deleted under
// token 5) and then 'bob' (inserted and deleted under token 12) are one key: the
// tombstone keeps the spelling first recorded ('Bob') and raises its token to 12 (the
// upsert updates the token, not the key's text). After the rebuild schema.Check
// reports the door; its Fix rebuilds the tombstone table under BINARY and copies the
// tombstone as it is, ('Bob', 12). schema.Check then reports OK, and a stale holder
// (token 11) inserts 'bob' — the key deleted under token 12 — through the fenced pool
// (while 'Bob', last deleted under 5, is refused).
// Right: a Fix that narrows the key's comparison cannot know which spellings a
// tombstone stood for: it must keep every spelling covered (e.g. raise the token
// floor to the greatest merged tombstone token, or record the spelling of the latest
// deletion and report that older spellings are lost), or offer no automatic Fix; in
// any case the stale INSERT of 'bob' under token 11 must fail.
func TestTombKeyFixAfterNarrowedCollationKeepsTombstones(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn)
	check := func() schema.TableReport {
		t.Helper()
		reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
		if err != nil {
			t.Fatal(err)
		}
		return reps[0]
	}
	testdb.Exec(t, raw, "CREATE TABLE accounts (name TEXT COLLATE NOCASE NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw, check().Fix...)
	db := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	for _, s := range []struct {
		n uint64
		q string
	}{
		{5, "INSERT INTO accounts (name) VALUES ('Bob')"}, {5, "DELETE FROM accounts WHERE name = 'Bob'"},
		{12, "INSERT INTO accounts (name) VALUES ('bob')"}, {12, "DELETE FROM accounts WHERE name = 'bob'"},
	} {
		if _, err := db.ExecContext(tok(s.n), s.q); err != nil {
			t.Fatalf("%s: %v", s.q, err)
		}
	}
	db.Close()
	testdb.Exec(t, raw, "CREATE TABLE new_accounts (name TEXT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO new_accounts SELECT * FROM accounts", "DROP TABLE accounts", "ALTER TABLE new_accounts RENAME TO accounts")
	rep := check()
	testdb.Exec(t, raw, rep.Fix...)
	rep = check()
	db2 := testdb.Open(t, sqlite.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	_, err := db2.ExecContext(tok(11), "INSERT INTO accounts (name) VALUES ('bob')")
	if err == nil {
		t.Fatalf("after the tombstone key Fix (schema.Check OK=%v), a stale INSERT of 'bob' under token 11 succeeded; 'bob' was deleted under token 12", rep.OK())
	}
}

// tombGuardedDB: a plain connection on a fresh database with ddl's table accounts guarded
// and tombstoned by schema.Check's Fix (reported OK after it).
func tombGuardedDB(t *testing.T, ddl string) *sql.DB {
	t.Helper()
	return tombGuardedAt(t, testdb.SQLite(t), ddl)
}

// tombGuardedAt is tombGuardedDB on the database dsn names.
func tombGuardedAt(t *testing.T, dsn, ddl string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", dsn, ddl)
	raw.SetMaxOpenConns(1)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("after the fix: %+v %v", reps, err)
	}
	return raw
}
