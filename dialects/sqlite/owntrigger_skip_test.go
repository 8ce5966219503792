package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// skipLedger creates ledger with rows 1 and 2 (token 10), runs the statements before
// (triggers made before the guards), installs the guard and the tombstone guard with
// schema.Check's Fix (the guard parts only: the report may hold doors), and returns the
// plain connection and the database path.
func skipLedger(t *testing.T, before ...string) (*sql.DB, string) {
	t.Helper()
	path := testdb.SQLite(t)
	raw := testdb.Open(t, "sqlite", path, "CREATE TABLE ledger (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO ledger (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1)")
	raw.SetMaxOpenConns(1)
	testdb.Exec(t, raw, before...)
	testdb.Exec(t, raw, sqlite.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "ledger"}, "fence_token", "version")...)
	testdb.Exec(t, raw, sqlite.Dialect.(dialect.Tombstoner).TombstoneDDL(dialect.TableName{Name: "ledger"}, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, "fence_token")...)
	return raw, path
}

// skipDoors returns schema.Check's report on ledger and the objects of its own-trigger
// doors, each checked to carry DROP TRIGGER as its Fix.
func skipDoors(t *testing.T, raw *sql.DB) (schema.TableReport, []string) {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, sqlite.Dialect, schema.GuardSpec{Table: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	var objs []string
	for _, sd := range reps[0].SideDoors {
		if sd.Kind != dialect.SideDoorOwnTrigger {
			continue
		}
		objs = append(objs, sd.Object)
		if len(sd.Fix) != 1 || !strings.HasPrefix(sd.Fix[0], "DROP TRIGGER IF EXISTS ") {
			t.Errorf("fix of %s: %q", sd.Object, sd.Fix)
		}
	}
	return reps[0], objs
}

// skipStale deletes key 1 under token 20 through a fenced pool, then writes it back
// under token 15 with stale; it returns the errors of both and, when the DELETE
// passed, whether key 1 is back (below token 20: any row of it).
func skipStale(t *testing.T, raw *sql.DB, path, stale string) (del, write error, back bool) {
	t.Helper()
	ctx := context.Background()
	fenced := testdb.Open(t, "fenced-sqlite", path+"&fenced_tables=ledger")
	if _, del = fenced.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM ledger WHERE id = 1"); del == nil {
		_, write = fenced.ExecContext(fencedsql.WithToken(ctx, 15), stale)
	}
	var n int
	if err := raw.QueryRow("SELECT count(*) FROM ledger WHERE id = 1").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return del, write, del == nil && n > 0
}

// A trigger of the guarded table, of any timing and event, whose WHEN clause or body
// uses RAISE(IGNORE), in any spelling, is an own-trigger door: SQLite runs a table's
// triggers newest first, and RAISE(IGNORE) in one made after the guards abandons the
// tombstone guard's AFTER triggers while the row change stays — an AFTER DELETE one
// left no tombstone, an AFTER INSERT one skipped the tombstone check, an AFTER UPDATE
// one the key-move check, and a key deleted under token 20 came back under token 15,
// schema.Check green and the lazy check passing (red-team rt48j F1–F3). Each is
// reported with DROP TRIGGER, the pool refuses the table (the DELETE fails with
// ErrSchema, key 1 stays at token 10), and after the Fix the stale write is fenced.
func TestOwnTriggerRaiseIgnoreIsDoor(t *testing.T) {
	insert := "INSERT INTO ledger (id, balance, version) VALUES (1, 666, 1)"
	move := "UPDATE ledger SET id = 1 WHERE id = 2"
	for _, c := range []struct{ name, trigger, stale string }{
		{"after delete", "CREATE TRIGGER audit_del AFTER DELETE ON ledger BEGIN SELECT RAISE(IGNORE); END", insert},
		{"after insert with when", "CREATE TRIGGER audit_ins AFTER INSERT ON ledger WHEN NEW.balance > 0 BEGIN SELECT RAISE(IGNORE); END", insert},
		{"after update of key", "CREATE TRIGGER audit_upd AFTER UPDATE OF id ON ledger BEGIN SELECT RAISE(IGNORE); END", move},
		{"spelling", "create trigger \"Audit\" after delete on \"main\".\"LEDGER\" for each row begin select 1; select raise /* c */ (\n -- x\n ignore ); end", insert},
		{"in case", "CREATE TRIGGER audit_case AFTER INSERT ON ledger BEGIN SELECT CASE WHEN NEW.balance > 0 THEN RAISE ( Ignore ) END; END", insert},
		{"in when", "CREATE TRIGGER audit_when AFTER DELETE ON ledger WHEN (SELECT RAISE(IGNORE)) IS NULL BEGIN SELECT 1; END", insert},
		{"before delete", "CREATE TRIGGER keep_del BEFORE DELETE ON ledger WHEN OLD.balance >= 0 BEGIN SELECT RAISE(IGNORE); END", insert},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, path := skipLedger(t)
			if _, err := raw.Exec(c.trigger); err != nil {
				t.Skipf("SQLite refuses %s: %v", c.trigger, err)
			}
			rep, doors := skipDoors(t, raw)
			if rep.OK() || len(doors) != 1 || !strings.Contains(strings.Join(rep.Problems, " "), "RAISE(IGNORE)") {
				t.Fatalf("%s: schema.Check OK=%v, own-trigger doors %q (%q); want the trigger reported", c.trigger, rep.OK(), doors, rep.Problems)
			}
			del, write, back := skipStale(t, raw, path, c.stale)
			if !errors.Is(del, fencedsql.ErrSchema) || back {
				t.Fatalf("%s: the DELETE under token 20: %v, the stale write under token 15: %v, key 1 back below 20: %v; want the pool to refuse the table (ErrSchema)", c.trigger, del, write, back)
			}
			testdb.Exec(t, raw, rep.Fix...)
			if rep, _ := skipDoors(t, raw); !rep.OK() {
				t.Fatalf("after the Fix: %q", rep.Problems)
			}
			if del, write, back := skipStale(t, raw, path, c.stale); del != nil || !errors.Is(write, fencedsql.ErrFenced) || back {
				t.Fatalf("after the Fix: DELETE %v, stale write %v, key 1 back %v; want the stale write fenced", del, write, back)
			}
		})
	}
}

// A trigger of the guarded table whose body writes the table itself is an own-trigger
// door whatever its timing and event: an AFTER DELETE trigger that re-inserts the row
// at token 0, made after the guards, ran before the tombstone record (newest first),
// so its INSERT found no tombstone and a key deleted under token 20 was back at token
// 0 for a holder of token 15 to write (red-team rt48j F4). An AFTER trigger that only
// logs the token into another table, and a BEFORE DELETE trigger that refuses with
// RAISE(ABORT), are no doors.
func TestOwnTriggerSelfWriteIsDoorAnyTiming(t *testing.T) {
	raw, path := skipLedger(t)
	testdb.Exec(t, raw, "CREATE TABLE audit (id INTEGER, tok BIGINT)",
		"CREATE TRIGGER log_upd AFTER UPDATE ON ledger BEGIN INSERT INTO audit VALUES (NEW.id, NEW.fence_token); END",
		"CREATE TRIGGER no_del BEFORE DELETE ON ledger WHEN OLD.fence_token > 1000 BEGIN SELECT RAISE(ABORT, 'kept'); END")
	if rep, doors := skipDoors(t, raw); !rep.OK() || len(doors) != 0 {
		t.Fatalf("no-door triggers reported: %q", rep.Problems)
	}
	testdb.Exec(t, raw, "CREATE TRIGGER keep AFTER DELETE ON ledger BEGIN INSERT INTO ledger (id, balance, fence_token, version) VALUES (OLD.id, OLD.balance, 0, OLD.version + 1); END")
	rep, doors := skipDoors(t, raw)
	if strings.Join(doors, ",") != "keep on ledger" || !strings.Contains(strings.Join(rep.Problems, " "), "writes ledger itself") {
		t.Fatalf("own-trigger doors %q (%q); want keep reported", doors, rep.Problems)
	}
	if del, write, back := skipStale(t, raw, path, "UPDATE ledger SET balance = 666 WHERE id = 1"); !errors.Is(del, fencedsql.ErrSchema) || back {
		t.Fatalf("DELETE under 20: %v, stale UPDATE under 15: %v, key 1 back below 20: %v; want ErrSchema", del, write, back)
	}
}

// The judgement is by content, not by the order the triggers were made in: a trigger
// using RAISE(IGNORE) made before the guards runs after them (harmless while it stays
// so), but re-creating either reverses the order, so it is reported already, and still
// after the guards are installed again (fencedsql-schema -apply re-creates them).
func TestOwnTriggerJudgedWhateverCreationOrder(t *testing.T) {
	raw, _ := skipLedger(t, "CREATE TRIGGER early AFTER DELETE ON ledger BEGIN SELECT RAISE(IGNORE); END")
	for range 2 {
		if rep, doors := skipDoors(t, raw); strings.Join(doors, ",") != "early on ledger" {
			t.Fatalf("own-trigger doors %q (%q); want early reported", doors, rep.Problems)
		}
		testdb.Exec(t, raw, sqlite.Dialect.(dialect.Tombstoner).TombstoneDDL(dialect.TableName{Name: "ledger"}, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, "fence_token")...)
	}
}
