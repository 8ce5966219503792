package mysql_test

// The guards' own tables (the tombstone table, the token floor) changed under intact
// guards, and triggers elsewhere that write them (red-team rt27c F1–F5, F7: "deleted
// stays deleted and the guards guard themselves"), MariaDB 10.11. Each change must be
// a door of schema.Check (kind "guard table" or "guard writer") whose Fix restores the
// guards, refused by the fenced pool's lazy check (ErrSchema, nothing written), and a
// floor the tools refuse (ErrFloorUnsafe) — not a stale write accepted.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// gtInstall creates accounts, installs its guards, runs setup on a plain connection and
// returns the database's DSN, a plain connection to it and a context for the test.
func gtInstall(t *testing.T, setup ...string) (string, *sql.DB, context.Context) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	t.Cleanup(cancel)
	reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	testdb.Exec(t, raw, setup...)
	return dsn, raw, ctx
}

func gtReport(t *testing.T, dsn string) schema.TableReport {
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

// gtRefusedThenFixed runs stmt under token through a new fenced pool and checks that
// the lazy check refuses it (ErrSchema naming a door of kind); then that schema.Check
// reports a door of kind (its problem text starts with the kind) naming want, with a
// Fix, and that the report is clean after the Fix ran.
func gtRefusedThenFixed(t *testing.T, dsn string, token uint64, stmt, kind, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, token), stmt); !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), kind+" ") {
		t.Fatalf("%s through the pool: %v, want ErrSchema naming a %q door", stmt, err, kind)
	}
	rep := gtReport(t, dsn)
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
	if after := gtReport(t, dsn).Problems; len(after) != 0 {
		t.Fatalf("after the Fix %q, schema.Check still reports %q", rep.Fix, after)
	}
}

// gtFloorHolds raises the floor to floor and checks that stale, a plain write under a
// token below it, is refused.
func gtFloorHolds(t *testing.T, raw *sql.DB, stale string, floor uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, floor); err != nil {
		t.Fatalf("after the Fix: RaiseTokenFloor: %v", err)
	}
	if _, err := raw.Exec(stale); err == nil {
		t.Errorf("after the Fix, floor raised to %d: %s was accepted", floor, stale)
	}
}

// gtDeletedStaysDeleted deletes key 1 under token 100 through a new fenced pool, runs
// between (under token 90) and checks that an INSERT of key 1 under token 90 is refused
// with ErrFenced.
func gtDeletedStaysDeleted(t *testing.T, dsn string, between ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, s := range between {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), s); err != nil {
			t.Fatalf("%s through the pool: %v", s, err)
		}
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 90), "INSERT INTO accounts (id, balance) VALUES (1, -1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("after the Fix: stale INSERT (token 90) of key 1 deleted under 100: %v, want ErrFenced", err)
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
	dsn, raw, _ := gtInstall(t, "ALTER TABLE fencedsql_tomb_accounts MODIFY fence_token FLOAT NOT NULL")
	gtRefusedThenFixed(t, dsn, 16777217, "INSERT INTO accounts (id, balance) VALUES (1, 1)", "guard table", "fence_token is float")
	testdb.Exec(t, raw,
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 16777217, 1)",
		"DELETE FROM accounts WHERE id = 1")
	if _, err := raw.Exec("INSERT INTO accounts (id, fence_token, version) VALUES (1, 16777216, 1)"); err == nil {
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
	dsn, raw, ctx := gtInstall(t,
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1)",
		"ALTER TABLE fencedsql_floor MODIFY floor FLOAT NOT NULL")
	raiseErr := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 16777217)
	fl, flErr := schema.TokenFloor(ctx, raw, mysql.Dialect)
	if !errors.Is(raiseErr, schema.ErrFloorUnsafe) || !errors.Is(flErr, schema.ErrFloorUnsafe) {
		t.Fatalf("FLOAT floor: RaiseTokenFloor(16777217) = %v, TokenFloor = %d, %v; want ErrFloorUnsafe from both (schema.Check problems %q)", raiseErr, fl, flErr, gtReport(t, dsn).Problems)
	}
	gtRefusedThenFixed(t, dsn, 16777217, "UPDATE accounts SET balance = 2 WHERE id = 1", "guard table", "floor is float")
	gtFloorHolds(t, raw, "UPDATE accounts SET balance = 1, fence_token = 16777216, version = version + 1 WHERE id = 1", 16777217)
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
	dsn, _, _ := gtInstall(t,
		"CREATE TABLE rt27c_parent (id BIGINT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO rt27c_parent VALUES (1)",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"ALTER TABLE fencedsql_tomb_accounts ADD CONSTRAINT rt27c_fk FOREIGN KEY (id) REFERENCES rt27c_parent (id) ON DELETE CASCADE")
	gtRefusedThenFixed(t, dsn, 100, "DELETE FROM accounts WHERE id = 1", "guard table", "foreign key rt27c_fk")
	gtDeletedStaysDeleted(t, dsn, "DELETE FROM rt27c_parent WHERE id = 1")
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
	dsn, raw, ctx := gtInstall(t, "INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)")
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw,
		"CREATE TABLE rt27c_fp (v BIGINT PRIMARY KEY) ENGINE=InnoDB",
		"INSERT INTO rt27c_fp VALUES (50)",
		"ALTER TABLE fencedsql_floor DROP CONSTRAINT fencedsql_floor_not_negative", // MariaDB cannot re-parse it in an ALTER (error 1901)
		"ALTER TABLE fencedsql_floor ADD CONSTRAINT rt27c_ffk FOREIGN KEY (floor) REFERENCES rt27c_fp (v) ON UPDATE CASCADE")
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
	gtRefusedThenFixed(t, dsn, 20, "INSERT INTO accounts (id, balance) VALUES (2, -1)", "guard table", "foreign key rt27c_ffk")
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
	dsn, _, _ := gtInstall(t,
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"CREATE TRIGGER rt27c_zero_ins BEFORE INSERT ON fencedsql_tomb_accounts FOR EACH ROW SET NEW.fence_token = 0",
		"CREATE TRIGGER rt27c_zero_upd BEFORE UPDATE ON fencedsql_tomb_accounts FOR EACH ROW SET NEW.fence_token = 0")
	gtRefusedThenFixed(t, dsn, 100, "DELETE FROM accounts WHERE id = 1", "guard table", "trigger")
	gtDeletedStaysDeleted(t, dsn)
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
	dsn, raw, ctx := gtInstall(t,
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 10, 1)",
		"CREATE TRIGGER rt27c_keep_floor BEFORE UPDATE ON fencedsql_floor FOR EACH ROW SET NEW.floor = OLD.floor")
	if err := schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 50); !errors.Is(err, schema.ErrFloorUnsafe) {
		t.Fatalf("floor table with a BEFORE UPDATE trigger: RaiseTokenFloor(50) = %v, want ErrFloorUnsafe", err)
	}
	gtRefusedThenFixed(t, dsn, 20, "UPDATE accounts SET balance = 2 WHERE id = 1", "guard table", "trigger")
	gtFloorHolds(t, raw, "UPDATE accounts SET balance = 1, fence_token = 20, version = version + 1 WHERE id = 1", 50)
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
	dsn, _, _ := gtInstall(t,
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 60, 1)",
		"CREATE TABLE audit (id BIGINT AUTO_INCREMENT PRIMARY KEY, msg TEXT) ENGINE=InnoDB",
		"CREATE TRIGGER rt27c_audit AFTER INSERT ON audit FOR EACH ROW DELETE FROM fencedsql_tomb_accounts")
	gtRefusedThenFixed(t, dsn, 100, "DELETE FROM accounts WHERE id = 1", "guard writer", "rt27c_audit")
	gtDeletedStaysDeleted(t, dsn, "INSERT INTO audit (msg) VALUES ('x')")
}
