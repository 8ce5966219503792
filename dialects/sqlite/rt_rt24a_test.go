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

// TestRTrt24aImpostorUnicodeFold: guardTriggers compares a guard-named trigger's
// text with the text this version writes using strings.EqualFold, i.e. Unicode
// simple case folding, under which U+017F (ſ, LATIN SMALL LETTER LONG S) equals
// 's'. SQLite, however, folds only ASCII in identifiers: "fencedſql_tomb_accounts" is
// another table. A plain connection creates such a decoy (empty) tombstone table and
// re-creates fencedsql_tombins_accounts reading the decoy instead of the real
// tombstone table: every character the same under EqualFold, the version marker
// kept. schema.Check reports the table OK, the pool's lazy check lets it through, and
// a stale INSERT (token 10) brings back a key deleted under token 60 through the
// fenced pool with no error.
// Right: compare the trigger text byte for byte (or fold ASCII only, as SQLite does),
// so the impostor is an own-trigger door: schema.Check not OK (Fix re-creates the
// trigger), the pool refuses the table with ErrSchema, and the stale INSERT fails.
func TestRTrt24aImpostorUnicodeFold(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	var orig string
	if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tombins_accounts'`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	decoy := "fencedſql_tomb_accounts" // U+017F for the 's' of fencedsql
	forged := strings.ReplaceAll(orig, `"fencedsql_tomb_accounts"`, `"`+decoy+`"`)
	if forged == orig || !strings.EqualFold(forged, orig) {
		t.Fatalf("could not forge: %q", orig)
	}
	ownExec(t, raw, `CREATE TABLE "`+decoy+`" AS SELECT * FROM fencedsql_tomb_accounts WHERE 0`,
		`DROP TRIGGER fencedsql_tombins_accounts`, forged)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Fatalf("schema.Check OK with fencedsql_tombins_accounts forged with a Unicode-folded decoy table name")
	}
	testdb.Exec(t, raw, "DELETE FROM accounts WHERE id = 1") // under token 60: the real tombstone
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
	var n int
	raw.QueryRow(`SELECT count(*) FROM accounts WHERE id = 1`).Scan(&n)
	if !errors.Is(err, fencedsql.ErrSchema) || n != 0 {
		t.Fatalf("stale INSERT (token 10) of key 1 deleted under token 60, the trigger forged: err = %v, rows now %d; want ErrSchema and nothing inserted", err, n)
	}
}

// TestRTrt24aReplaceNullToken: from a plain connection, a REPLACE that writes NULL in
// the NOT NULL token column (which has a DEFAULT) over a row written under token 20.
// The BEFORE triggers fencedsql_tombrep_/tombmov_ compare o.fence_token > NEW.fence_token
// with NEW.fence_token NULL, so they record nothing; SQLite's REPLACE resolution then
// turns the NULL into the column's default (0), deletes the row of token 20 (no delete
// trigger) and writes the stale row; the AFTER checks see token 0 and no tombstone.
// The newer row is overwritten with token 0, no error.
// Right: refuse as TestReplaceFromPlainConnection's spellings are (treat a NULL NEW
// token as the lowest, e.g. o.fence_token > coalesce(NEW.fence_token, <default or
// -infinity>), or record the displaced row whenever one exists), nothing changed.
func TestRTrt24aReplaceNullToken(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		"INSERT OR REPLACE INTO accounts (id, balance, fence_token, version) VALUES (1, -1, NULL, 9)",
		"REPLACE INTO accounts (id, balance, fence_token, version) SELECT 1, -1, NULL, 9",
		"UPDATE OR REPLACE accounts SET id = 1, balance = -1, fence_token = NULL, version = version + 1 WHERE id = 3",
	} {
		t.Run(q, func(t *testing.T) {
			raw := rt20gGuarded(t)
			_, err := raw.ExecContext(ctx, q)
			var bal, tok int
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			if err == nil || bal == -1 || tok != 20 {
				t.Fatalf("%s over the row of token 20: err = %v, row 1 now balance %d token %d; want the tombstone guard's refusal and the row unchanged", q, err, bal, tok)
			}
		})
	}
}

// TestRTrt24aReplaceOnRowid: a guarded rowid table whose primary key is not the rowid
// (name TEXT PRIMARY KEY), no other UNIQUE index. A REPLACE from a plain connection
// that names the hidden rowid of the row 'a' (token 20) collides on the rowid, not on
// the primary key: SQLite deletes 'a' without its delete trigger, and the
// fencedsql_tombrep_/tombmov_ triggers, comparing the primary key only, record nothing.
// The row of token 20 is gone under a stale writer (token 5) with no tombstone, so a
// holder of token 6 can insert 'a' again. This is not the documented open item (a
// UNIQUE index other than the primary key): the table has no such index, and the
// rowid is in every rowid table.
// Right: record the row a REPLACE displaces by rowid too (the BEFORE triggers also
// match o.rowid = NEW.rowid when the table has a rowid that is not the key), or
// document and lint it; the stale REPLACE is refused and 'a' stays.
func TestRTrt24aReplaceOnRowid(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		"INSERT OR REPLACE INTO accounts (rowid, name, balance, fence_token, version) VALUES (1, 'zzz', -1, 5, 9)",
		"UPDATE OR REPLACE accounts SET rowid = 1, balance = -1, version = version + 1 WHERE name = 'b'",
	} {
		t.Run(q, func(t *testing.T) {
			raw := rt24aDB(t, "CREATE TABLE accounts (name TEXT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			testdb.Exec(t, raw, "INSERT INTO accounts (rowid, name, fence_token, version) VALUES (1, 'a', 20, 1), (2, 'b', 5, 1)")
			_, err := raw.ExecContext(ctx, q)
			var n int
			raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE name = 'a' AND fence_token = 20").Scan(&n)
			if err == nil && n == 0 {
				// 'a' deleted as a plain DELETE deletes it: it stays deleted below 20.
				if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (name, fence_token, version) VALUES ('a', 6, 1)"); err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
					t.Fatalf("%s deleted 'a' (token 20); then INSERT of 'a' under token 6: %v; want the tombstone guard's refusal", q, err)
				}
				if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (name, fence_token, version) VALUES ('a', 20, 1)"); err != nil {
					t.Fatalf("INSERT of 'a' under its deleting token 20: %v", err)
				}
			}
		})
	}
}

// TestRTrt24aTriggerDeletesTombstones: a trigger of the table's own, under an ordinary
// name, whose body deletes the key's tombstone before the tombstone guard's AFTER
// INSERT check reads it:
//
//	CREATE TRIGGER aa_clean BEFORE INSERT ON accounts BEGIN
//	  DELETE FROM fencedsql_tomb_accounts WHERE id = NEW.id; END
//
// ownTriggers judges a BEFORE trigger only by whether it names the token or version
// column, writes the table itself or uses RAISE(IGNORE); otherTriggers only by whether
// another table's trigger writes the guarded table. Neither looks at writes to the
// tombstone table (nor at triggers of other tables that write it), so schema.Check
// reports the table OK, the pool's lazy check passes, and a stale INSERT (token 10)
// through the fenced pool brings back a key deleted under token 60.
// Right: a trigger (on the table or any other table of its schema) whose body writes
// fencedsql_tomb_<table> (or the token floor) is a door: reported by schema.Check with
// DROP TRIGGER as Fix, and the pool refuses the table (ErrSchema).
func TestRTrt24aTriggerDeletesTombstones(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	ownExec(t, raw, `CREATE TRIGGER aa_clean BEFORE INSERT ON accounts BEGIN DELETE FROM fencedsql_tomb_accounts WHERE id = NEW.id; END`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Fatal("schema.Check OK with a trigger that deletes tombstones")
	}
	testdb.Exec(t, raw, "DELETE FROM accounts WHERE id = 1") // under token 60: the real tombstone
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
	var n int
	raw.QueryRow(`SELECT count(*) FROM accounts WHERE id = 1`).Scan(&n)
	if !errors.Is(err, fencedsql.ErrSchema) || n != 0 {
		t.Fatalf("stale INSERT (token 10) of key 1 deleted under token 60 with a trigger deleting tombstones: err = %v, rows now %d; want ErrSchema from the pool", err, n)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].OK() {
		t.Fatalf("after the Fix: %+v %v", reps, err)
	}
}

// TestRTrt24aTombstoneTableCollationNotChecked: the tombstone key door
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
func TestRTrt24aTombstoneTableCollationNotChecked(t *testing.T) {
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

// TestRTrt24aNullKeyRowUndeletable (over-refusal, untyped error): SQLite lets a
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
func TestRTrt24aNullKeyRowUndeletable(t *testing.T) {
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

// TestRTrt24aTombKeyFixNarrowedCollation: the tombstone key door's Fix after a key
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
func TestRTrt24aTombKeyFixNarrowedCollation(t *testing.T) {
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

// rt24aDB: a plain connection on a fresh database with ddl's table accounts guarded
// and tombstoned by schema.Check's Fix (reported OK after it).
func rt24aDB(t *testing.T, ddl string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t), ddl)
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
