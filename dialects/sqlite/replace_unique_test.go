package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// uniqCols are the columns of the accounts tables of the UNIQUE-index REPLACE tests,
// after the primary key's.
const uniqCols = "email TEXT, a INT, b INT, active INT NOT NULL DEFAULT 1, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"

// uniqDB: a plain connection on a fresh database with ddl's accounts table (then the
// statements more, e.g. a CREATE UNIQUE INDEX) guarded and tombstoned by
// schema.Check's Fix; the table may keep problems no statement fixes (a lint
// problem, an expression index), but is guarded and tombstoned after it.
func uniqDB(t *testing.T, ddl string, more ...string) *sql.DB {
	t.Helper()
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t), ddl)
	raw.SetMaxOpenConns(1)
	testdb.Exec(t, raw, more...)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || !reps[0].Guarded || !reps[0].Tombstoned {
		t.Fatalf("after the fix: %+v %v", reps, err)
	}
	return raw
}

// TestReplaceUniqueFromPlainConnection: a write from a plain connection (or a plain
// INSERT, also the wrapper's, under a UNIQUE … ON CONFLICT REPLACE constraint) by a
// stale writer (token 5) collides with the newer row 1 (token 20) on a UNIQUE index
// other than the primary key: SQLite deletes row 1 without its delete triggers. Its
// tombstone must be recorded at its own token, as its DELETE records it, so that a
// holder between the two tokens (10) cannot insert key 1 again; the holder of the
// deleting token (20) can. Column indexes of every kind: a single column, a composite
// one, a NOCASE column and a NOCASE index on a BINARY column ('A' vs 'a'), a partial
// index entered by changing its WHERE column only, a table constraint ON CONFLICT
// REPLACE (a plain INSERT or UPDATE replaces), a WITHOUT ROWID table and a rowid table
// whose key is not the rowid.
func TestReplaceUniqueFromPlainConnection(t *testing.T) {
	ctx := context.Background()
	const rows = "INSERT INTO accounts (id, email, a, b, active, fence_token, version) VALUES (1, 'A', 1, 1, 1, 20, 1), (3, 'b', 1, 2, 1, 5, 1)"
	type tc struct {
		name, ddl string
		more      []string
		rows      string
		stmts     []string
	}
	email := []string{
		"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'A', 7, 7, 5, 1)",
		"REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'A', 7, 7, 5, 1)",
		"REPLACE INTO accounts (id, email, a, b, fence_token, version) SELECT 2, 'A', 7, 7, 5, 1",
		"UPDATE OR REPLACE accounts SET email = 'A', balance = -1, version = version + 1 WHERE id = 3",
	}
	cases := []tc{
		{name: "unique column", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ", UNIQUE (email))", stmts: email},
		{name: "unique index", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ")", more: []string{"CREATE UNIQUE INDEX accounts_email ON accounts (email)"}, stmts: email},
		{name: "composite", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ", UNIQUE (a, b))", stmts: []string{
			"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'c', 1, 1, 5, 1)",
			"UPDATE OR REPLACE accounts SET b = 1, version = version + 1 WHERE id = 3",
			"UPDATE OR REPLACE accounts SET a = 1, b = 1, version = version + 1 WHERE id = 3",
		}},
		{name: "nocase column", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + strings.Replace(uniqCols, "email TEXT", "email TEXT COLLATE NOCASE UNIQUE", 1) + ")", stmts: []string{
			"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'a', 7, 7, 5, 1)",
			"UPDATE OR REPLACE accounts SET email = 'a', version = version + 1 WHERE id = 3",
		}},
		{name: "nocase index", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ")", more: []string{"CREATE UNIQUE INDEX accounts_email ON accounts (email COLLATE NOCASE)"}, stmts: []string{
			"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'a', 7, 7, 5, 1)",
			"UPDATE OR REPLACE accounts SET email = 'a', version = version + 1 WHERE id = 3",
		}},
		{name: "on conflict replace", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ", UNIQUE (email) ON CONFLICT REPLACE)", stmts: []string{
			"INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'A', 7, 7, 5, 1)",
			"UPDATE accounts SET email = 'A', version = version + 1 WHERE id = 3",
		}},
		{name: "partial", ddl: "CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ")", more: []string{"CREATE UNIQUE INDEX accounts_email ON accounts (email) WHERE active = 1"},
			rows: "INSERT INTO accounts (id, email, a, b, active, fence_token, version) VALUES (1, 'A', 1, 1, 1, 20, 1), (3, 'A', 1, 2, 0, 5, 1)",
			stmts: []string{
				"UPDATE OR REPLACE accounts SET active = 1, version = version + 1 WHERE id = 3",
				"INSERT OR REPLACE INTO accounts (id, email, a, b, active, fence_token, version) VALUES (2, 'A', 7, 7, 1, 5, 1)",
			}},
		{name: "without rowid", ddl: "CREATE TABLE accounts (id INTEGER NOT NULL PRIMARY KEY, " + uniqCols + ", UNIQUE (email)) WITHOUT ROWID", stmts: email},
		{name: "rowid apart from the key", ddl: "CREATE TABLE accounts (id BIGINT PRIMARY KEY, " + uniqCols + ", UNIQUE (email))", stmts: email},
	}
	for _, c := range cases {
		for _, q := range c.stmts {
			t.Run(c.name+"/"+q, func(t *testing.T) {
				raw := uniqDB(t, c.ddl, c.more...)
				r := c.rows
				if r == "" {
					r = rows
				}
				testdb.Exec(t, raw, r)
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				var n int
				if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE id = 1").Scan(&n); err != nil || n != 0 {
					t.Fatalf("%s did not delete row 1 (%d rows, %v): the test does not collide", q, n, err)
				}
				_, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, 'zzz', 9, 9, 10, 1)")
				if err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
					t.Fatalf("%s deleted row 1 (token 20); then INSERT of key 1 under token 10: %v; want the tombstone guard's refusal", q, err)
				}
				if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, 'zzz', 9, 9, 20, 1)"); err != nil {
					t.Fatalf("INSERT of key 1 under its deleting token 20: %v", err)
				}
			})
		}
	}
}

// TestReplaceUniqueNullsNeverCollide: a UNIQUE index lets NULLs repeat, so a REPLACE
// of a row with a NULL in a unique column displaces nothing, and no tombstone of the
// row sharing that NULL is recorded.
func TestReplaceUniqueNullsNeverCollide(t *testing.T) {
	ctx := context.Background()
	raw := uniqDB(t, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (a, b), UNIQUE (email))")
	testdb.Exec(t, raw, "INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, NULL, 1, NULL, 20, 1)",
		"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, NULL, 1, NULL, 5, 1)",
		"UPDATE OR REPLACE accounts SET balance = 3, version = version + 1 WHERE id = 2")
	var rows, tombs int
	if err := raw.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM fencedsql_tomb_accounts)").Scan(&rows, &tombs); err != nil || rows != 2 || tombs != 0 {
		t.Fatalf("after REPLACEs of NULLs: %d rows, %d tombstones (%v); want 2 rows, no tombstone", rows, tombs, err)
	}
}

// TestReplaceUniqueIndexAddedAfterInstall: a UNIQUE index created after the tombstone
// guard was installed would leave its REPLACE triggers blind to it: schema.Check
// reports the guard as not installed (the triggers name the unique indexes they were
// written for), the Fix re-installs the triggers, after which a REPLACE that collides
// on the new index records the row it deletes. The pool's lazy check, which does not
// require the tombstone guard, keeps accepting the table meanwhile: the stale triggers
// are the text this version writes for the indexes they name, not a forgery.
func TestReplaceUniqueIndexAddedAfterInstall(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+")")
	raw.SetMaxOpenConns(1)
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() {
		t.Fatalf("after the fix: %+v %v", reps, err)
	}
	testdb.Exec(t, raw, "CREATE UNIQUE INDEX accounts_email ON accounts (email COLLATE NOCASE)",
		"INSERT INTO accounts (id, email, fence_token, version) VALUES (1, 'A', 20, 1)")
	reps, err = schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() || reps[0].Tombstoned || len(reps[0].Fix) == 0 || !strings.Contains(strings.Join(reps[0].Problems, "\n"), "unique indexes") {
		t.Fatalf("a UNIQUE index created after the tombstone guard: report %+v; want the guard reported as not installed for the unique indexes, with a Fix", reps[0])
	}
	db := testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("fenced UPDATE with the tombstone guard stale: %v; the lazy check does not require the tombstone guard", err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("after the second fix: %+v %v", reps, err)
	}
	testdb.Exec(t, raw, "INSERT OR REPLACE INTO accounts (id, email, fence_token, version) VALUES (2, 'a', 5, 1)")
	if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, email, fence_token, version) VALUES (1, 'zzz', 10, 1)"); err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
		t.Fatalf("after a REPLACE deleted row 1 (token 20, now 30) on the new index, INSERT of key 1 under token 10: %v; want the tombstone guard's refusal", err)
	}
	// Dropping the index makes the triggers stale again: reported, fixed.
	testdb.Exec(t, raw, "DROP INDEX accounts_email")
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || reps[0].Tombstoned || len(reps[0].Fix) == 0 {
		t.Fatalf("after DROP INDEX: %+v %v; want the guard reported as not installed", reps, err)
	} else {
		testdb.Exec(t, raw, reps[0].Fix...)
	}
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() {
		t.Fatalf("after the third fix: %+v %v", reps, err)
	}
}

// TestReplaceUniqueMarkerForged: the REPLACE triggers are compared whole with the text
// written for the unique indexes their marker names: a weakened trigger that keeps a
// marker (naming the table's index or another) is a door, the lazy check refuses the
// table (ErrSchema) and the Fix re-creates the trigger.
func TestReplaceUniqueMarkerForged(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (email))")
	raw.SetMaxOpenConns(1)
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	var orig string
	if err := raw.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tombrep_accounts'").Scan(&orig); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(orig, `WHERE o."email" = NEW."email"`, `WHERE 0 AND o."email" = NEW."email"`, 2)
	if forged == orig || !strings.Contains(forged, "/* fencedsql unique indexes [") {
		t.Fatalf("could not forge: %s", orig)
	}
	testdb.Exec(t, raw, "DROP TRIGGER fencedsql_tombrep_accounts", forged)
	reps, err = schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() || !strings.Contains(strings.Join(reps[0].Problems, "\n"), "fencedsql_tombrep_accounts") {
		t.Fatalf("forged REPLACE trigger keeping its marker: report %+v; want a door", reps[0])
	}
	db := testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 30), "INSERT INTO accounts (id, email) VALUES (1, 'x')"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("fenced INSERT under the forged trigger: %v, want ErrSchema", err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() {
		t.Fatalf("after the fix: %+v %v", reps, err)
	}
}

// TestReplaceUniqueExpressionReported: a UNIQUE index on an expression cannot be
// compared column by column, so the REPLACE triggers do not see a collision on it:
// schema.Check reports the table (a side door of its own kind, with no Fix), rather
// than leaving it silently open; the column indexes beside it are still covered.
func TestReplaceUniqueExpressionReported(t *testing.T) {
	ctx := context.Background()
	raw := uniqDB(t, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (a, b))", "CREATE UNIQUE INDEX accounts_lower ON accounts (lower(email))")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	var found []dialect.SideDoor
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorUniqueExpression {
			found = append(found, sd)
		}
	}
	if reps[0].OK() || len(found) != 1 || !strings.Contains(found[0].Object, "accounts_lower") || len(found[0].Fix) != 0 || found[0].Note {
		t.Fatalf("report %+v; want one unique-expression side door for accounts_lower, a problem without Fix", reps[0])
	}
	testdb.Exec(t, raw, "INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, 'A', 1, 1, 20, 1)",
		"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'B', 1, 1, 5, 1)")
	if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, email, fence_token, version) VALUES (1, 'zzz', 10, 1)"); err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
		t.Fatalf("REPLACE on the column index beside the expression index: re-INSERT of key 1 under token 10: %v; want the refusal", err)
	}
}

// TestTombstoneUniqueDDLShape: the REPLACE triggers compare each column index (one OR
// search each, UNION ALL, under the index's collation, the key's own row left out) and leave out
// an expression index and one holding the key; the UPDATE trigger runs when a unique
// column changes, and on every UPDATE where an index is partial.
func TestTombstoneUniqueDDLShape(t *testing.T) {
	u := sqlite.Dialect.(dialect.UniqueTombstoner)
	key := []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}
	unique := []dialect.UniqueIndex{
		{Name: "e", Columns: []dialect.KeyColumn{{Name: "email", Collation: "nocase"}}},
		{Name: "ab", Columns: []dialect.KeyColumn{{Name: "a", Collation: "BINARY"}, {Name: "b", Collation: "BINARY"}}},
		{Name: "x", Columns: []dialect.KeyColumn{{Name: "", Collation: "BINARY"}}},
		{Name: "withkey", Columns: []dialect.KeyColumn{{Name: "c", Collation: "BINARY"}, {Name: "id", Collation: "BINARY"}}},
	}
	ddl := u.TombstoneUniqueDDL(dialect.TableName{Name: "t"}, key, unique, "tok")
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		`WHEN EXISTS (SELECT 1 FROM "t" o WHERE o."id" = NEW."id" AND (NEW."tok" IS NULL OR o."tok" > NEW."tok") UNION ALL SELECT 1 FROM "t" o WHERE o."email" = NEW."email" COLLATE "nocase" AND NOT coalesce(o."id" = NEW."id", 0) AND o."id" IS NOT NULL UNION ALL `,
		` UNION ALL SELECT o."id", max(coalesce(o."tok", 0), coalesce(NEW."tok", 0)), ((julianday('now') - 2440587.5) * 86400.0) FROM "t" o WHERE o."a" = NEW."a" COLLATE "BINARY" AND o."b" = NEW."b" COLLATE "BINARY" AND NOT coalesce(o."id" = NEW."id", 0) AND o."id" IS NOT NULL AND NOT (o."id" = OLD."id")` + "\n",
		`WHEN (OLD."id" IS NOT NEW."id" OR OLD."email" IS NOT NEW."email" OR OLD."a" IS NOT NEW."a" OR OLD."b" IS NOT NEW."b") AND EXISTS`,
		"/* fencedsql tombstone guard v4 */",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneUniqueDDL lacks %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, `o."c"`) || strings.Contains(all, `o."" `) {
		t.Errorf("TombstoneUniqueDDL compares an index holding the key, or an expression:\n%s", all)
	}
	if plain, none := sqlite.Dialect.(dialect.Tombstoner).TombstoneDDL(dialect.TableName{Name: "t"}, key, "tok"), u.TombstoneUniqueDDL(dialect.TableName{Name: "t"}, key, nil, "tok"); strings.Join(plain, "\n") != strings.Join(none, "\n") {
		t.Errorf("TombstoneDDL differs from TombstoneUniqueDDL with no unique index")
	}
	// The REPLACE triggers name the indexes they were written for, expressions too.
	if none := strings.Join(u.TombstoneUniqueDDL(dialect.TableName{Name: "t"}, key, unique[2:], "tok"), "\n"); strings.Contains(none, `o."c"`) || strings.Count(none, "/* fencedsql unique indexes [") != 2 || strings.Count(all, "/* fencedsql unique indexes [] */") != 0 {
		t.Errorf("TombstoneUniqueDDL with an expression and a key-holding index:\n%s", none)
	}
	unique[1].Partial = true
	ddl = u.TombstoneUniqueDDL(dialect.TableName{Name: "t"}, key, unique, "tok")
	if mov := ddl[len(ddl)-1]; !strings.Contains(mov, "FOR EACH ROW\nWHEN EXISTS (") {
		t.Errorf("with a partial index, the UPDATE trigger does not run on every UPDATE:\n%s", mov)
	}
}

// TestReplaceUniqueOlderInstallReported: a tombstone guard of the previous version
// (v3, whose REPLACE triggers compare the primary key only) is reported as not
// installed, and the Fix installs this one.
func TestReplaceUniqueOlderInstallReported(t *testing.T) {
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t), "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (email))")
	raw.SetMaxOpenConns(1)
	table := dialect.TableName{Name: "accounts"}
	testdb.Exec(t, raw, sqlite.Dialect.(dialect.Guarder).GuardDDL(table, schema.DefaultTokenColumn, schema.DefaultVersionColumn)...)
	for _, st := range sqlite.Dialect.(dialect.Tombstoner).TombstoneDDL(table, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, schema.DefaultTokenColumn) {
		testdb.Exec(t, raw, strings.Replace(st, "/* fencedsql tombstone guard v4 */", "/* fencedsql tombstone guard v3 */", 1))
	}
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() || reps[0].Tombstoned || len(reps[0].Fix) == 0 {
		t.Fatalf("a v3 tombstone guard: report %+v; want it reported as not installed, with a Fix", reps[0])
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("after the Fix: %+v %v", reps, err)
	}
	testdb.Exec(t, raw, "INSERT INTO accounts (id, email, fence_token, version) VALUES (1, 'A', 20, 1)",
		"REPLACE INTO accounts (id, email, fence_token, version) VALUES (2, 'A', 5, 1)")
	if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, email, fence_token, version) VALUES (1, 'zzz', 10, 1)"); err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
		t.Fatalf("after the Fix, a REPLACE deleted row 1 (token 20) on email; INSERT of key 1 under token 10: %v; want the refusal", err)
	}
}

// TestReplaceUniqueWritesUnchanged: on a table with UNIQUE indexes, writes that
// displace nothing record nothing (an UPDATE of a unique column that collides with no
// other row, a key-changing UPDATE that keeps the unique columns, in a rowid table and
// a WITHOUT ROWID one), and the wrapper's writes keep their results: a stale INSERT
// colliding on a UNIQUE column fails with ErrDuplicate, not ErrFenced, and leaves no
// tombstone (the statement is undone); a DELETE records its tombstone as ever.
func TestReplaceUniqueWritesUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, ddl := range []string{
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, " + uniqCols + ", UNIQUE (email), UNIQUE (a, b))",
		"CREATE TABLE accounts (id INTEGER NOT NULL PRIMARY KEY, " + uniqCols + ", UNIQUE (email), UNIQUE (a, b)) WITHOUT ROWID",
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, " + uniqCols + ", UNIQUE (email COLLATE NOCASE), UNIQUE (a, b))",
	} {
		t.Run(ddl, func(t *testing.T) {
			raw := uniqDB(t, ddl)
			tombs := func() int {
				t.Helper()
				var n int
				if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM fencedsql_tomb_accounts").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			testdb.Exec(t, raw, "INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, 'A', 1, 1, 20, 1), (3, 'b', 1, 2, 5, 1)",
				"UPDATE accounts SET email = 'c', version = version + 1 WHERE id = 3",
				"UPDATE accounts SET balance = 4, a = 2, version = version + 1 WHERE id = 3",
				"UPDATE OR REPLACE accounts SET email = 'A', version = version + 1 WHERE id = 1",
				"INSERT OR REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (4, 'd', 4, 4, 5, 1)")
			if n := tombs(); n != 0 {
				t.Fatalf("writes displacing nothing recorded %d tombstones", n)
			}
			testdb.Exec(t, raw, "UPDATE accounts SET id = 5, version = version + 1 WHERE id = 3")
			var tok int
			if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_accounts WHERE id = 3").Scan(&tok); err != nil || tombs() != 1 || tok != 5 {
				t.Fatalf("key-changing UPDATE: tombstone of 3 at %d (%v), %d tombstones; want key 3 at 5 only", tok, err, tombs())
			}
		})
	}
	dsn := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", dsn, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (email))")
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	db := testdb.Open(t, "fenced-sqlite", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, email) VALUES (1, 'A')"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "INSERT INTO accounts (id, email) VALUES (2, 'A')"); !errors.Is(err, fencedsql.ErrDuplicate) || errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT colliding on email: %v; want ErrDuplicate", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET email = 'B' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 21), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	var id, tok int
	if err := raw.QueryRowContext(ctx, "SELECT id, fence_token FROM fencedsql_tomb_accounts").Scan(&id, &tok); err != nil || id != 1 || tok != 21 {
		t.Fatalf("tombstones after the wrapper's writes: %d at %d (%v); want key 1 at 21 only", id, tok, err)
	}
}

// TestReplaceUniqueAttached: the unique indexes are read, compiled and compared in the
// attached database the table is in.
func TestReplaceUniqueAttached(t *testing.T) {
	ctx := context.Background()
	raw := testdb.Open(t, "sqlite", testdb.SQLite(t))
	raw.SetMaxOpenConns(1)
	testdb.Exec(t, raw, "ATTACH DATABASE '"+t.TempDir()+"/aux.db' AS aux",
		"CREATE TABLE aux.accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (email))",
		"CREATE TABLE main.accounts (id INTEGER PRIMARY KEY, "+uniqCols+")")
	spec := schema.GuardSpec{Table: "aux.accounts"}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("after the fix: %+v %v", reps, err)
	}
	testdb.Exec(t, raw, "INSERT INTO aux.accounts (id, email, fence_token, version) VALUES (1, 'A', 20, 1)",
		"REPLACE INTO aux.accounts (id, email, fence_token, version) VALUES (2, 'A', 5, 1)")
	if _, err := raw.ExecContext(ctx, "INSERT INTO aux.accounts (id, email, fence_token, version) VALUES (1, 'zzz', 10, 1)"); err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
		t.Fatalf("aux: after a REPLACE deleted row 1 (token 20) on email, INSERT of key 1 under token 10: %v; want the refusal", err)
	}
	testdb.Exec(t, raw, "CREATE UNIQUE INDEX aux.accounts_ab ON accounts (a, b)")
	if reps, err := schema.Check(ctx, raw, sqlite.Dialect, spec); err != nil || reps[0].Tombstoned {
		t.Fatalf("aux: after CREATE UNIQUE INDEX: %+v %v; want the guard reported as not installed", reps, err)
	}
}

// replaceUniqueCase runs q (from a plain connection) on a guarded, tombstoned accounts
// table holding row 1 (token 20) and row 3 (token 5); q must delete row 1; then an
// INSERT of key 1 under token 10 must be refused by the tombstone guard.
func replaceUniqueCase(t *testing.T, ddl string, more []string, rows, q, reinsert string) {
	t.Helper()
	ctx := context.Background()
	raw := uniqDB(t, ddl, more...)
	testdb.Exec(t, raw, rows)
	if _, err := raw.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE id = 1").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%s did not delete row 1 (%d rows, %v): the test does not collide", q, n, err)
	}
	_, err := raw.ExecContext(ctx, reinsert)
	if err == nil || !strings.Contains(err.Error(), sqlite.TombstoneMessagePrefix) {
		t.Fatalf("%s deleted row 1 (token 20); then the INSERT of key 1 under an older token: %v; want the tombstone guard's refusal", q, err)
	}
}

// TestReplaceUniqueRecordsDeletersToken: a REPLACE (or UPDATE OR REPLACE) from a
// plain connection by the NEWEST holder (token 30) that collides on UNIQUE(email) with
// row 1 (token 20) deletes row 1: holder 30 deleted it. Tombstone guard v4 records row
// 1's tombstone at the row's own token (20), not the deleter's (30), so holder 25 —
// older than the deleter — inserts key 1 again. G9: "If a holder with token t deleted a
// row, no INSERT … under a token older than t may succeed, whether it goes through
// the wrapper or hits the database-side guards". Right behaviour: the displaced row's
// tombstone is recorded at max(its token, NEW's token) (as the wrapper's fenced DELETE
// records the deleter's token), so the INSERT of key 1 under 25 is refused.
func TestReplaceUniqueRecordsDeletersToken(t *testing.T) {
	const rows = "INSERT INTO accounts (id, email, a, b, active, fence_token, version) VALUES (1, 'A', 1, 1, 1, 20, 1), (3, 'b', 1, 2, 1, 5, 1)"
	for _, q := range []string{
		"REPLACE INTO accounts (id, email, a, b, fence_token, version) VALUES (2, 'A', 7, 7, 30, 1)",
		"UPDATE OR REPLACE accounts SET email = 'A', fence_token = 30, version = version + 1 WHERE id = 3",
	} {
		t.Run(q, func(t *testing.T) {
			replaceUniqueCase(t, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, "+uniqCols+", UNIQUE (email))", nil, rows, q,
				"INSERT INTO accounts (id, email, a, b, fence_token, version) VALUES (1, 'zzz', 9, 9, 25, 1)")
		})
	}
}

// TestTombstoneTableUniqueReplaceReported: the tombstone table kept by CREATE TABLE IF
// NOT EXISTS carries an extra `UNIQUE (fence_token) ON CONFLICT REPLACE` (a
// migration's table). guardTableProblems judges only the token column's type and the
// foreign keys, so the table passes; but the DELETE trigger's upsert (ON CONFLICT of
// the key only) resolves the other constraint by its own clause, REPLACE: recording
// key 2's tombstone at token 100 deletes key 1's tombstone at token 100. A fenced
// DELETE of both rows under 100 through the pool leaves one tombstone, and the stale
// holder (90) re-inserts key 1 through the pool.
// Right behaviour: a guard table carrying any UNIQUE constraint or index other than
// its key (or any ON CONFLICT clause) is a SideDoorGuardTable door: the lazy check
// refuses accounts (ErrSchema), schema.Check reports it with a rebuild Fix; in any
// case the stale INSERT must not succeed.
func TestTombstoneTableUniqueReplaceReported(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t) // accounts guarded + tombstoned; row 1 at token 60
	exec := func(s ...string) { t.Helper(); ownExec(t, raw, s...) }
	var orig string
	if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tomb_accounts'`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(orig, ")")
	forged := orig[:i] + `, UNIQUE (fence_token) ON CONFLICT REPLACE` + orig[i:]
	exec(`DROP TABLE fencedsql_tomb_accounts`, forged,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 1, 60, 1)`)
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	if reps[0].OK() {
		t.Errorf("schema.Check: OK with a tombstone table carrying UNIQUE (fence_token) ON CONFLICT REPLACE; want a guard table door")
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), `DELETE FROM accounts WHERE id IN (1, 2)`); err != nil {
		t.Logf("fenced DELETE under 100: %v", err)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM fencedsql_tomb_accounts`).Scan(&n)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), `INSERT INTO accounts (id, balance) VALUES (1, -1)`); !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT (token 90) of key 1 deleted under 100 (tombstones left: %d): %v, want ErrSchema or ErrFenced", n, err)
	}
}

// lazyCheckTime guards n tables (each with a UNIQUE column, as the v4 tombstone
// guard's REPLACE triggers cover) and returns the time of the first fenced write to
// one of them through a fresh pool (its lazy check), the best of three pools.
func lazyCheckTime(t *testing.T, n int) time.Duration {
	t.Helper()
	ctx := context.Background()
	file := "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "t.db")) + "?_pragma=busy_timeout(5000)"
	raw := testdb.Open(t, "sqlite", file)
	var specs []schema.GuardSpec
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("t%03d", i)
		names = append(names, name)
		ownExec(t, raw, "CREATE TABLE "+name+" (id INTEGER PRIMARY KEY, email TEXT UNIQUE, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
		specs = append(specs, schema.GuardSpec{Table: name})
	}
	reps, err := schema.Check(ctx, raw, sqlite.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		ownExec(t, raw, r.Fix...)
	}
	best := time.Hour
	for i := 0; i < 3; i++ {
		db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables="+strings.Join(names, ","))
		start := time.Now()
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), fmt.Sprintf("INSERT INTO t000 (id, balance) VALUES (%d, 1)", i+1)); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < best {
			best = d
		}
		db.Close()
	}
	return best
}
