package mysql_test

// The guards' own tables (the tombstone table, the token floor) changed under intact
// guards, and triggers elsewhere that write them (red-team rt27c F1–F5, F7: "deleted
// stays deleted and the guards guard themselves"), MariaDB 10.11. Each change must be
// a door of schema.Check (kind "guard table" or "guard writer") whose Fix restores the
// guards, refused by the fenced pool's lazy check (ErrSchema, nothing written), and a
// floor the tools refuse (ErrFloorUnsafe) — not a stale write accepted.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func rt27cInstall(t *testing.T) (string, func(string) error) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	return dsn, func(s string) error { _, err := raw.Exec(s); return err }
}

func rt27cCheck(t *testing.T, dsn string) []string {
	t.Helper()
	return rt27cReport(t, dsn).Problems
}

func rt27cReport(t *testing.T, dsn string) schema.TableReport {
	t.Helper()
	raw := testdb.Open(t, "mysql", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	return reps[0]
}

// rt27cDoor checks that schema.Check reports a door of kind (its problem text starts
// with the kind) naming want, runs the report's Fix, and checks that the report is
// clean afterwards.
func rt27cDoor(t *testing.T, dsn, kind, want string) {
	t.Helper()
	rep := rt27cReport(t, dsn)
	found := false
	for _, p := range rep.Problems {
		if strings.HasPrefix(p, kind+" ") && strings.Contains(p, want) {
			found = true
		}
	}
	if !found {
		t.Fatalf("schema.Check problems %q: want a %q door naming %q", rep.Problems, kind, want)
	}
	if len(rep.Fix) == 0 {
		t.Fatalf("schema.Check reports %q with no Fix", rep.Problems)
	}
	raw := testdb.Open(t, "mysql", dsn)
	testdb.Exec(t, raw, rep.Fix...)
	if after := rt27cCheck(t, dsn); len(after) != 0 {
		t.Fatalf("after the Fix %q, schema.Check still reports %q", rep.Fix, after)
	}
}

// rt27cRefused checks that err is the lazy check's refusal (ErrSchema) of a door of
// kind.
func rt27cRefused(t *testing.T, err error, kind string) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), kind+" ") {
		t.Fatalf("a write to accounts through the pool: %v, want ErrSchema naming a %q door", err, kind)
	}
}

// TestGuardTableTombstoneTokenColumnFloat (fail-open, unreported tampering). The
// tombstone table's fence_token column is created BIGINT, but nothing checks its type
// afterwards: dialects/mysql/tombkey.go compares only the key columns, LintSchema only
// the engine. `ALTER TABLE fencedsql_tomb_accounts MODIFY fence_token FLOAT NOT NULL`
// (the owner, a migration) keeps the triggers, which then store the deleter's token
// rounded to 24 bits of mantissa: a DELETE under token 16777217 records 16777216, and a
// plain INSERT of the key under the older token 16777216 is accepted — the row is back.
// schema.Check reports nothing and the fenced pool's lazy check accepts the table.
//
// Right behaviour: the tombstone table's token column must be BIGINT NOT NULL;
// anything else is a door of schema.Check (kind "guard table", Fix `ALTER TABLE …
// MODIFY fence_token BIGINT NOT NULL`) that the lazy check refuses (ErrSchema). A plain
// connection is not stopped by a check; after the Fix, a DELETE under 16777217 refuses
// the stale INSERT under 16777216 again.
func TestGuardTableTombstoneTokenColumnFloat(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	if err := exec("ALTER TABLE fencedsql_tomb_accounts MODIFY fence_token FLOAT NOT NULL"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 16777217), "INSERT INTO accounts (id, balance) VALUES (1, 1)")
	rt27cRefused(t, err, "guard table")
	rt27cDoor(t, dsn, "guard table", "fence_token is float")
	for _, s := range []string{
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 16777217, 1)",
		"DELETE FROM accounts WHERE id = 1",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := exec("INSERT INTO accounts (id, fence_token, version) VALUES (1, 16777216, 1)"); err == nil {
		t.Error("after the Fix, a stale plain INSERT (token 16777216) of a key deleted under 16777217 was accepted")
	}
}

// TestGuardTableFloorColumnFloat (fail-open, unreported tampering). The token floor's
// `floor` column is created BIGINT; GuardFloorsQuery checks the floor is a BASE TABLE,
// LintSchema its engine, but not the column's type. After `ALTER TABLE fencedsql_floor
// MODIFY floor FLOAT NOT NULL` a RaiseTokenFloor to 16777217 stores 16777216 and a
// plain UPDATE under token 16777216 (below the raised floor) is accepted; schema.Check
// reports nothing and TokenFloor reads 16777216.
//
// Right behaviour: a floor column that is not BIGINT is a door of schema.Check and
// ErrFloorUnsafe for the floor tools (as PostgreSQL's "whose floor is a bigint"), and
// the lazy check refuses the guarded table.
func TestGuardTableFloorColumnFloat(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	if err := exec("INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)"); err != nil {
		t.Fatal(err)
	}
	if err := exec("ALTER TABLE fencedsql_floor MODIFY floor FLOAT NOT NULL"); err != nil {
		t.Fatal(err)
	}
	raw := testdb.Open(t, "mysql", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	raiseErr := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 16777217)
	fl, flErr := schema.TokenFloor(ctx, raw, mysql.Dialect)
	problems := rt27cCheck(t, dsn)
	if !errors.Is(raiseErr, schema.ErrFloorUnsafe) || !errors.Is(flErr, schema.ErrFloorUnsafe) {
		t.Fatalf("FLOAT floor: RaiseTokenFloor(16777217) = %v, TokenFloor = %d, %v; want ErrFloorUnsafe from both (schema.Check problems %q)", raiseErr, fl, flErr, problems)
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 16777217), "UPDATE accounts SET balance = 2 WHERE id = 1")
	rt27cRefused(t, err, "guard table")
	rt27cDoor(t, dsn, "guard table", "floor is float")
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 16777217); err != nil {
		t.Fatalf("after the Fix: RaiseTokenFloor: %v", err)
	}
	if err := exec("UPDATE accounts SET balance = 1, fence_token = 16777216, version = version + 1 WHERE id = 1"); err == nil {
		t.Error("after the Fix, floor raised to 16777217: a plain UPDATE under 16777216 was accepted")
	}
}

// TestGuardTableTombstoneTableCascadeFromParent (fail-open through the pool, unreported).
// The cascade doors (mysql/sidedoor.go cascades) are read for the guarded table only.
// A foreign key ON the tombstone table, `ALTER TABLE fencedsql_tomb_accounts ADD
// FOREIGN KEY (id) REFERENCES rt27c_parent (id) ON DELETE CASCADE`, lets a DELETE of an
// unguarded parent row — through the fenced pool — delete the key's tombstone
// (InnoDB's cascade: no trigger, no privilege on the tombstone table needed), and a
// stale INSERT of the key deleted under a newer token is accepted. schema.Check
// reports nothing.
//
// Right behaviour: a foreign key of the tombstone table (or the floor table) is a door
// (schema.Check, lazy check), Fix: DROP FOREIGN KEY; the guards need none.
func TestGuardTableTombstoneCascadeFromParent(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	for _, s := range []string{
		"CREATE TABLE rt27c_parent (id BIGINT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO rt27c_parent VALUES (1)",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"ALTER TABLE fencedsql_tomb_accounts ADD CONSTRAINT rt27c_fk FOREIGN KEY (id) REFERENCES rt27c_parent (id) ON DELETE CASCADE",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1")
	rt27cRefused(t, err, "guard table")
	rt27cDoor(t, dsn, "guard table", "foreign key rt27c_fk")
	db = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "DELETE FROM rt27c_parent WHERE id = 1"); err != nil {
		t.Fatalf("parent DELETE through the pool: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, -1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the Fix: stale INSERT (token 90) of key 1 deleted under 100: %v, want ErrFenced", err)
	}
}

// TestGuardTableFloorLoweredByCascade (fail-open through the pool, unreported). A foreign
// key ON the token floor, `ALTER TABLE fencedsql_floor ADD FOREIGN KEY (floor)
// REFERENCES rt27c_fp (v) ON UPDATE CASCADE`, added after a raise to 50: an UPDATE of
// the unguarded parent (through the fenced pool) sets the floor to 0 by InnoDB's
// cascade (no trigger, no right on the floor table), and a write under token 20, below
// the raised floor, is accepted. schema.Check reports nothing; TokenFloor reads 0.
//
// Right behaviour: a foreign key of the floor table (or a tombstone table) is a door
// (schema.Check, ErrFloorUnsafe for the floor tools, lazy check), Fix: DROP FOREIGN
// KEY.
func TestGuardTableFloorLoweredByCascade(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	raw := testdb.Open(t, "mysql", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"CREATE TABLE rt27c_fp (v BIGINT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO rt27c_fp VALUES (50)",
		"ALTER TABLE fencedsql_floor DROP CONSTRAINT fencedsql_floor_not_negative", // MariaDB cannot re-parse it in an ALTER (error 1901)
		"ALTER TABLE fencedsql_floor ADD CONSTRAINT rt27c_ffk FOREIGN KEY (floor) REFERENCES rt27c_fp (v) ON UPDATE CASCADE",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE rt27c_fp SET v = 0 WHERE v = 50"); err != nil {
		t.Logf("parent UPDATE through the pool: %v", err)
	}
	if fl, err := schema.TokenFloor(ctx, raw, mysql.Dialect); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("TokenFloor of a floor with a foreign key: %d, %v; want ErrFloorUnsafe", fl, err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Errorf("RaiseTokenFloor of a floor with a foreign key: %v; want ErrFloorUnsafe", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, -1)")
	rt27cRefused(t, err, "guard table")
	rt27cDoor(t, dsn, "guard table", "foreign key rt27c_ffk")
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatalf("after the Fix: RaiseTokenFloor: %v", err)
	}
	db = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO accounts (id, balance) VALUES (2, -1)"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Errorf("after the Fix, floor 50: write under token 20: %v, want ErrBelowFloor", err)
	}
}

// TestGuardTableTriggerOnTombstoneTable (fail-open through the pool, unreported). A
// trigger ON the tombstone table, `BEFORE INSERT … SET NEW.fence_token = 0` (and the
// same BEFORE UPDATE, for the upsert path of the DELETE trigger's record), made by its
// owner or any account with TRIGGER on it, makes every tombstone refuse nothing: a
// stale INSERT through the fenced pool of a key deleted under a newer token is
// accepted. MySQL/MariaDB's checks compare the triggers ON the guarded table (named
// like the guard's) but look at no trigger on the tombstone or floor table (SQLite's
// guardWriters does, rt24a F4); schema.Check reports nothing.
//
// Right behaviour: any trigger on a tombstone table or the floor table is a door
// (schema.Check with DROP TRIGGER as Fix; the lazy check refuses the table).
func TestGuardTableTriggerOnTombstoneTable(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	for _, s := range []string{
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"CREATE TRIGGER rt27c_zero_ins BEFORE INSERT ON fencedsql_tomb_accounts FOR EACH ROW SET NEW.fence_token = 0",
		"CREATE TRIGGER rt27c_zero_upd BEFORE UPDATE ON fencedsql_tomb_accounts FOR EACH ROW SET NEW.fence_token = 0",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1")
	rt27cRefused(t, err, "guard table")
	rt27cDoor(t, dsn, "guard table", "trigger")
	db = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, -1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the Fix: stale INSERT (token 90) of key 1 deleted under 100: %v, want ErrFenced", err)
	}
}

// TestGuardTableTriggerOnFloorTable (fail-open, unreported). A trigger ON the floor
// table, `BEFORE UPDATE ON fencedsql_floor … SET NEW.floor = OLD.floor`, turns every
// raise into a no-op: RaiseTokenFloor(50) returns nil (it does not read back the floor
// it wrote), the floor stays 0 and a write under token 20 is accepted. The floor tools
// check only that the floor is a BASE TABLE (rt25a F0); PostgreSQL refuses a floor
// carrying other triggers than its sync trigger (floorTableSafe). schema.Check reports
// nothing.
//
// Right behaviour: a floor table carrying triggers is unsafe (ErrFloorUnsafe for the
// raise; a door of schema.Check and the lazy check), and the raise reads back the
// floor it wrote.
func TestGuardTableTriggerOnFloorTable(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	for _, s := range []string{
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 10, 1)",
		"CREATE TRIGGER rt27c_keep_floor BEFORE UPDATE ON fencedsql_floor FOR EACH ROW SET NEW.floor = OLD.floor",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	raw := testdb.Open(t, "mysql", dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Fatalf("floor table with a BEFORE UPDATE trigger: RaiseTokenFloor(50) = %v, want ErrFloorUnsafe", err)
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1")
	rt27cRefused(t, err, "guard table")
	rt27cDoor(t, dsn, "guard table", "trigger")
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatalf("after the Fix: RaiseTokenFloor: %v", err)
	}
	if err := exec("UPDATE accounts SET balance = 1, fence_token = 20, version = version + 1 WHERE id = 1"); err == nil {
		t.Error("after the Fix, floor 50: a plain UPDATE under token 20 was accepted")
	}
}

// TestGuardTableTriggerElsewhereDeletesTombstones (fail-open through the pool,
// unreported). A trigger on an unguarded table the application writes (`audit`,
// AFTER INSERT … DELETE FROM fencedsql_tomb_accounts), created by an account that may
// write the tombstone table (it runs as its DEFINER), erases the tombstones whenever
// the application writes `audit` through the fenced pool; a stale INSERT of a key
// deleted under a newer token is then accepted. SQLite reports such a trigger
// (dialect.SideDoorGuardWriter, rt24a F4); MySQL/MariaDB's door finders look for
// triggers that write the guarded table, not its tombstone table or the floor;
// schema.Check reports nothing.
//
// Right behaviour: a trigger whose body writes a tombstone table or the floor is a
// door (SideDoorGuardWriter) on MySQL/MariaDB too, Fix: DROP TRIGGER.
func TestGuardWriterTriggerElsewhereDeletesTombstones(t *testing.T) {
	dsn, exec := rt27cInstall(t)
	for _, s := range []string{
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"CREATE TABLE audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, msg TEXT) ENGINE=InnoDB",
		"CREATE TRIGGER rt27c_audit AFTER INSERT ON audit FOR EACH ROW DELETE FROM fencedsql_tomb_accounts",
	} {
		if err := exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1")
	rt27cRefused(t, err, "guard writer")
	rt27cDoor(t, dsn, "guard writer", "rt27c_audit")
	db = testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO audit (msg) VALUES ('x')"); err != nil {
		t.Fatalf("audit INSERT through the pool: %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, -1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the Fix: stale INSERT (token 90) of key 1 deleted under 100: %v, want ErrFenced", err)
	}
}
