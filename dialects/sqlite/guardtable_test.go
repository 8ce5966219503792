package sqlite_test

// The guards' own tables (the tombstone table, the token floor) as the guards create
// them, and the token's storage class (red-team rt27c F1–F4, F8: "deleted stays
// deleted and the guards guard themselves", SQLite).

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// guardTableRetype rebuilds table (a guard table: the tombstone or the floor table) with
// column col declared TEXT instead of INTEGER, keeping its rows (SQLite's way to change
// a column's type). The triggers that name the table are kept: SQLite reads trigger
// bodies when they fire.
func guardTableRetype(t *testing.T, exec func(...string), sqlOf func(string) string, table, col string) {
	t.Helper()
	orig := sqlOf(table)
	forged := strings.Replace(orig, col+" INTEGER NOT NULL", col+" TEXT NOT NULL", 1)
	if forged == orig {
		t.Fatalf("cannot retype %s in %q", col, orig)
	}
	exec("CREATE TABLE rt27c_keep AS SELECT * FROM "+table, "DROP TABLE "+table, forged,
		"INSERT INTO "+table+" SELECT * FROM rt27c_keep", "DROP TABLE rt27c_keep")
}

// TestTombstoneTokenColumnText (fail-open, unreported tampering). The tombstone
// table's fence_token is created INTEGER, and the tombstone-key door
// (dialect.SideDoorTombstoneKey, sqlite/tombkey.go) checks the key columns' type and
// collation only. Rebuilt with `fence_token TEXT NOT NULL` (what SQLite's twelve-step
// ALTER produces), the DELETE trigger's `ON CONFLICT … DO UPDATE SET fence_token =
// max(fence_token, excluded.fence_token)` compares tokens as text: after holder 9
// deleted key 1 and wrote it back, holder 10's DELETE leaves the tombstone at '9'
// (max('9', '10') = '9'), and holder 9's stale INSERT of key 1 — through the fenced
// pool — is accepted. schema.Check reports the table OK.
//
// Now: a tombstone table whose token column lacks INTEGER affinity is a door
// (dialect.SideDoorGuardTable: a schema.Check problem with a rebuild Fix; ErrSchema
// from the lazy check, so the pool writes nothing to accounts), as the floor's and the
// fencing columns' affinity are. The writes of holders 90 and 100 go through a plain
// connection (the pool refuses them now); after the Fix, tokens compare as numbers.
func TestTombstoneTokenColumnText(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t) // accounts guarded + tombstoned; row 1 at token 60
	exec := func(s ...string) { t.Helper(); ownExec(t, raw, s...) }
	sqlOf := func(name string) (s string) {
		if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = ?`, name).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	exec("DELETE FROM accounts WHERE id = 1") // tombstone (1, 60)
	guardTableRetype(t, exec, sqlOf, "fencedsql_tomb_accounts", "fence_token")
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	// Holder 90 writes key 1 back and a newer holder 100 deletes it.
	exec(`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 1, 90, 1)`,
		`UPDATE accounts SET fence_token = 100, version = version + 1 WHERE id = 1`, `DELETE FROM accounts WHERE id = 1`)
	var tomb string
	raw.QueryRow(`SELECT quote(fence_token) FROM fencedsql_tomb_accounts WHERE id = 1`).Scan(&tomb)
	door := guardTableDoor(t, raw, "fencedsql_tomb_accounts", "fence_token TEXT NOT NULL")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 90), `INSERT INTO accounts (id, balance) VALUES (1, -1)`)
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("stale INSERT (token 90) of key 1 deleted under token 100 through the pool (tombstone now %s): %v, want ErrSchema", tomb, err)
	}
	guardTableFixed(t, raw, door)
	var typ string
	raw.QueryRow(`SELECT typeof(fence_token) FROM fencedsql_tomb_accounts WHERE id = 1`).Scan(&typ)
	if typ != "integer" {
		t.Errorf("tombstone token after the Fix: %s, want integer", typ)
	}
	// Tokens compare as numbers again: holder 100's DELETE of key 2 (written under 90)
	// refuses holder 90's stale INSERT of it.
	exec(`INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 1, 90, 1)`,
		`UPDATE accounts SET fence_token = 100, version = version + 1 WHERE id = 2`, `DELETE FROM accounts WHERE id = 2`)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), `INSERT INTO accounts (id, balance) VALUES (2, -1)`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the Fix, stale INSERT (token 90) of key 2 deleted under 100: %v, want ErrFenced", err)
	}
}

// TestFloorColumnText (fail-open, unreported tampering). The floor table
// fencedsql_floor rebuilt with `floor TEXT NOT NULL`: RaiseFloorQuery's
// `DO UPDATE SET floor = max(floor, excluded.floor)` compares text, so a raise from 9 to
// 10 keeps '9' and RaiseTokenFloor returns nil; a plain UPDATE under token 9 (below the
// raised floor) is accepted by the guard. schema.Check reports nothing.
//
// Now: a floor column without INTEGER affinity is unsafe (ErrFloorUnsafe for the
// floor tools: the raise writes nothing and says so), a door of schema.Check with a
// rebuild Fix, and the lazy check refuses the table. After the Fix the raise holds.
func TestFloorColumnText(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	exec := func(s ...string) { t.Helper(); ownExec(t, raw, s...) }
	sqlOf := func(name string) (s string) {
		if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = ?`, name).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 9); err != nil {
		t.Fatal(err)
	}
	guardTableRetype(t, exec, sqlOf, "fencedsql_floor", "floor")
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 100); !errors.Is(err, schema.ErrFloorUnsafe) {
		fl, flErr := schema.TokenFloor(ctx, raw, sqlite.Dialect)
		t.Errorf("raise to 100 over a TEXT floor: %v (TokenFloor %d, %v), want ErrFloorUnsafe", err, fl, flErr)
	}
	if _, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("TokenFloor over a TEXT floor: %v, want ErrFloorUnsafe", err)
	}
	door := guardTableDoor(t, raw, "fencedsql_floor", "floor TEXT NOT NULL")
	db := testdb.Open(t, "fenced-sqlite", file+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 200), `INSERT INTO accounts (id, balance) VALUES (7, 1)`); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("write through the pool with a TEXT floor: %v, want ErrSchema", err)
	}
	guardTableFixed(t, raw, door)
	if fl, err := schema.TokenFloor(ctx, raw, sqlite.Dialect); err != nil || fl != 9 {
		t.Errorf("floor after the Fix: %d, %v; want 9 (kept)", fl, err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO accounts (id, balance, fence_token, version) VALUES (7, 1, 9, 1)`); !sqlite.IsGuardError(err) && (err == nil || !strings.Contains(err.Error(), sqlite.FloorMessagePrefix)) {
		t.Errorf("plain INSERT under token 9, floor 100 after the Fix: %v, want the floor's refusal", err)
	}
}

// TestTombstoneTableCascadeFromParent (fail-open through the pool, unreported).
// guardWriters (rt24a F4) reports a trigger that may write the tombstone table or the
// floor, but not a foreign key ON the tombstone table: rebuilt with `FOREIGN KEY (id)
// REFERENCES rt27c_parent (id) ON DELETE CASCADE`, a DELETE of an unguarded parent row
// — sent through the fenced pool, which does not fence unguarded tables — deletes the
// key's tombstone (SQLite with foreign_keys on, here from the DSN), and the stale
// holder's INSERT of the key deleted under a newer token is accepted. schema.Check
// reports the table OK and the lazy check lets the write through.
//
// Now: any foreign key of the tombstone table (or the floor table) is a door (the
// guards create none), as a trigger writing them is; the lazy check refuses accounts;
// Fix: rebuild the guard table without it, keeping the tombstones. The key's DELETE
// under 100 goes through a plain connection (the pool refuses accounts now).
func TestTombstoneTableCascadeFromParent(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t) // accounts guarded + tombstoned; row 1 at token 60
	exec := func(s ...string) { t.Helper(); ownExec(t, raw, s...) }
	var orig string
	if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'fencedsql_tomb_accounts'`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(orig, ")")
	forged := orig[:i] + `, FOREIGN KEY ("id") REFERENCES rt27c_parent (id) ON DELETE CASCADE` + orig[i:]
	exec(`CREATE TABLE rt27c_parent (id INTEGER PRIMARY KEY)`, `INSERT INTO rt27c_parent VALUES (1)`,
		`DROP TABLE fencedsql_tomb_accounts`, forged)
	db := testdb.Open(t, "fenced-sqlite", file+"&_pragma=foreign_keys(1)&fenced_tables=accounts")
	exec(`UPDATE accounts SET fence_token = 100, version = version + 1 WHERE id = 1`, `DELETE FROM accounts WHERE id = 1`)
	door := guardTableDoor(t, raw, "fencedsql_tomb_accounts", "foreign key (id) REFERENCES rt27c_parent ON DELETE CASCADE")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), `DELETE FROM rt27c_parent WHERE id = 1`); err != nil {
		t.Logf("parent delete through the pool: %v", err)
	}
	var n int
	raw.QueryRow(`SELECT count(*) FROM fencedsql_tomb_accounts`).Scan(&n)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), `INSERT INTO accounts (id, balance) VALUES (1, -1)`); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("stale INSERT (token 90) of key 1 deleted under 100 after a parent DELETE cascaded into the tombstone table (tombstones left: %d): %v, want ErrSchema", n, err)
	}
	exec(`INSERT INTO rt27c_parent VALUES (2)`, `INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 1, 100, 1)`, `DELETE FROM accounts WHERE id = 2`)
	guardTableFixed(t, raw, door)
	var fks int
	raw.QueryRow(`SELECT count(*) FROM pragma_foreign_key_list('fencedsql_tomb_accounts')`).Scan(&fks)
	raw.QueryRow(`SELECT count(*) FROM fencedsql_tomb_accounts WHERE id = 2 AND fence_token = 100`).Scan(&n)
	if fks != 0 || n != 1 {
		t.Errorf("after the Fix: %d foreign keys, tombstone (2, 100) kept: %d", fks, n)
	}
}

// TestNonIntegerTokenPassesGuards (fail-open, low: a token of the wrong storage
// class). SQLite stores a TEXT or BLOB value in an INTEGER-affinity column when it does
// not look like a number, and orders every TEXT and BLOB above every number. The
// guards compare without looking at the class: the tombstone check `t.fence_token >
// NEW.fence_token` is false for NEW.fence_token = X'00' or 'x', and the floor check
// `NEW.fence_token >= floor` is true. So a plain INSERT with `fence_token = X'00'`
// re-creates a key deleted under token 100, below a raised floor. The row is then
// wedged as well: no fenced write can pass `fence_token <= ?` again. (A forged token;
// but it is no token at all, and code that does not know fencing can write one, e.g.
// by binding a []byte or a string.)
//
// Now: the row guard's triggers refuse a fencing column whose value is not an integer
// (`typeof(NEW.fence_token) <> 'integer'`, and the same for the version), in the
// guard's words (IsGuardError), for an INSERT and an UPDATE, so the tombstone and floor
// checks never see one; a token written as text that converts ('100' in an INTEGER
// column) is the integer and passes.
func TestNonIntegerTokenPassesGuards(t *testing.T) {
	ctx := context.Background()
	_, raw := ownTriggerDB(t) // accounts guarded + tombstoned; row 1 at token 60
	ownExec(t, raw, "UPDATE accounts SET fence_token = 100, version = version + 1 WHERE id = 1", "DELETE FROM accounts WHERE id = 1")
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 100); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, -1, X'00', 1)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, -1, 'x', 1)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, -1, 100.5, 1)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, -1, 200, X'00')",
	} {
		_, err := raw.Exec(q)
		var typ string
		raw.QueryRow("SELECT typeof(fence_token) FROM accounts WHERE id IN (1, 2)").Scan(&typ)
		if !sqlite.IsGuardError(err) || !strings.Contains(err.Error(), "is not an integer") {
			t.Errorf("%s (key 1 deleted under 100, floor 100): %v (token now a %s), want the guard's refusal", q, err, typ)
		}
	}
	ownExec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (3, 1, '200', '1')")
	for _, q := range []string{
		"UPDATE accounts SET fence_token = X'00', version = version + 1 WHERE id = 3",
		"UPDATE accounts SET version = 'x' WHERE id = 3",
	} {
		if _, err := raw.Exec(q); !sqlite.IsGuardError(err) || !strings.Contains(err.Error(), "is not an integer") {
			t.Errorf("%s: %v, want the guard's refusal", q, err)
		}
	}
	ownExec(t, raw, "UPDATE accounts SET fence_token = '201', version = version + 1 WHERE id = 3")
}

// TestFloorLoweredByCascade (fail-open through the pool, unreported). The floor
// table rebuilt with `FOREIGN KEY (floor) REFERENCES rt27c_fp (v) ON UPDATE CASCADE`
// (after a raise to 50): an UPDATE of the unguarded parent sent through the fenced pool
// (foreign_keys on in its DSN) sets the floor to 0, and a write under token 20 is
// accepted through the pool. guardWriters looks for triggers on or writing the floor,
// not foreign keys; schema.Check reports the table OK.
//
// Now: a foreign key on the floor (or a tombstone) table is a door (ErrSchema from the
// lazy check, a schema.Check problem with a rebuild Fix), and the floor tools refuse
// the floor (ErrFloorUnsafe).
func TestFloorLoweredByCascade(t *testing.T) {
	ctx := context.Background()
	file, raw := ownTriggerDB(t)
	exec := func(s ...string) { t.Helper(); ownExec(t, raw, s...) }
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	var orig string
	if err := raw.QueryRow(`SELECT sql FROM sqlite_master WHERE name = 'fencedsql_floor'`).Scan(&orig); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(orig, ")")
	forged := orig[:i] + `, FOREIGN KEY (floor) REFERENCES rt27c_fp (v) ON UPDATE CASCADE` + orig[i:]
	exec(`CREATE TABLE rt27c_fp (v INTEGER PRIMARY KEY)`, `INSERT INTO rt27c_fp VALUES (50)`,
		`CREATE TABLE rt27c_keep AS SELECT * FROM fencedsql_floor`, `DROP TABLE fencedsql_floor`, forged,
		`INSERT INTO fencedsql_floor SELECT * FROM rt27c_keep`, `DROP TABLE rt27c_keep`)
	door := guardTableDoor(t, raw, "fencedsql_floor", "foreign key (floor) REFERENCES rt27c_fp ON DELETE NO ACTION ON UPDATE CASCADE")
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 60); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("raise over a floor with a foreign key: %v, want ErrFloorUnsafe", err)
	}
	db := testdb.Open(t, "fenced-sqlite", file+"&_pragma=foreign_keys(1)&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE rt27c_fp SET v = 0 WHERE v = 50`); err != nil {
		t.Logf("parent UPDATE through the pool: %v", err)
	}
	var fl int64
	raw.QueryRow(`SELECT floor FROM fencedsql_floor`).Scan(&fl)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `INSERT INTO accounts (id, balance) VALUES (2, -1)`); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("floor 50 with a cascading FK: write under token 20 after a parent UPDATE through the pool: %v (floor now %d), want ErrSchema", err, fl)
	}
	guardTableFixed(t, raw, door)
	if err := schema.RaiseTokenFloor(ctx, raw, sqlite.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE rt27c_fp SET v = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `INSERT INTO accounts (id, balance) VALUES (2, -1)`); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after the Fix and a raise to 50, a write under token 20: %v, want ErrBelowFloor", err)
	}
}

// guardTableDoor returns the guard-table doors schema.Check reports on accounts, and
// fails the test unless there is one on object whose problem holds want and the
// report is not OK.
func guardTableDoor(t *testing.T, raw *sql.DB, object, want string) dialect.SideDoor {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorGuardTable && sd.Object == object && strings.Contains(sd.Problem, want) {
			if reps[0].OK() {
				t.Errorf("guard table door in a report that is OK: %+v", reps[0])
			}
			return sd
		}
	}
	t.Fatalf("no guard table door on %s holding %q: %+v", object, want, reps[0])
	return dialect.SideDoor{}
}

// guardTableFixed applies door's Fix and requires schema.Check to report accounts OK.
func guardTableFixed(t *testing.T, raw *sql.DB, door dialect.SideDoor) {
	t.Helper()
	if len(door.Fix) == 0 {
		t.Fatalf("door without a Fix: %+v", door)
	}
	ownExec(t, raw, door.Fix...)
	reps, err := schema.Check(context.Background(), raw, sqlite.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil || !reps[0].OK() {
		t.Fatalf("after the Fix: %+v, %v", reps, err)
	}
}

// A guarded table in an attached database: its tombstone table and floor there are
// judged, named with the schema, and the Fixes rebuild them there (keeping the rows);
// the main database's guard tables are not touched.
func TestGuardTablesAttached(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(dir, "m.db")))
	db.SetMaxOpenConns(1) // ATTACH is per connection
	exec := func(s ...string) { t.Helper(); ownExec(t, db, s...) }
	exec("ATTACH DATABASE '"+filepath.ToSlash(filepath.Join(dir, "aux.db"))+"' AS aux",
		`CREATE TABLE aux.accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	spec := schema.GuardSpec{Table: "aux.accounts"}
	reps, err := schema.Check(ctx, db, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	exec(reps[0].Fix...)
	exec(`INSERT INTO aux.accounts (id, balance, fence_token, version) VALUES (1, 1, 70, 1)`, `DELETE FROM aux.accounts WHERE id = 1`,
		`UPDATE aux.fencedsql_floor SET floor = 5`,
		`CREATE TABLE aux.keep AS SELECT * FROM aux.fencedsql_tomb_accounts`, `DROP TABLE aux.fencedsql_tomb_accounts`,
		`CREATE TABLE aux.fencedsql_tomb_accounts (id INTEGER NOT NULL, fence_token TEXT NOT NULL, deleted_at REAL NOT NULL, PRIMARY KEY (id)) WITHOUT ROWID`,
		`INSERT INTO aux.fencedsql_tomb_accounts SELECT * FROM aux.keep`, `DROP TABLE aux.keep`,
		`CREATE TABLE aux.keep AS SELECT * FROM aux.fencedsql_floor`, `DROP TABLE aux.fencedsql_floor`,
		`CREATE TABLE aux.fencedsql_floor (id INTEGER NOT NULL PRIMARY KEY, floor TEXT NOT NULL)`,
		`INSERT INTO aux.fencedsql_floor SELECT * FROM aux.keep`, `DROP TABLE aux.keep`)
	if reps, err = schema.Check(ctx, db, sqlite.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	var objects []string
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorGuardTable {
			objects = append(objects, sd.Object)
			exec(sd.Fix...)
		}
	}
	if strings.Join(objects, ",") != "aux.fencedsql_tomb_accounts,aux.fencedsql_floor" || reps[0].OK() {
		t.Fatalf("guard table doors %q, OK=%v; want both aux tables", objects, reps[0].OK())
	}
	if reps, err = schema.Check(ctx, db, sqlite.Dialect, spec); err != nil || !reps[0].OK() {
		t.Fatalf("after the Fixes: %+v, %v", reps, err)
	}
	var tok, floor any
	db.QueryRow(`SELECT fence_token FROM aux.fencedsql_tomb_accounts WHERE id = 1`).Scan(&tok)
	db.QueryRow(`SELECT floor FROM aux.fencedsql_floor WHERE id = 1`).Scan(&floor)
	if tok != int64(70) || floor != int64(5) {
		t.Errorf("after the Fixes: tombstone token %#v, floor %#v; want int64 70, 5", tok, floor)
	}
	var n int
	db.QueryRow(`SELECT count(*) FROM main.sqlite_master WHERE name LIKE 'fencedsql%'`).Scan(&n)
	if n != 0 {
		t.Errorf("%d fencedsql objects in main", n)
	}
}
