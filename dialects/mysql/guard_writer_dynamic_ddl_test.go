package mysql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A stored procedure or a scheduled event whose body changes acc's tombstone table or
// the token floor through dynamic SQL (red-team rt47b F1) or DDL (rt47b F2) is a door:
// schema.Check reports it. Functions and triggers can run neither (the server refuses
// them), and are judged by the same rule (bodywrites.go).

// guardDoorReported reports whether one of problems names object.
func guardDoorReported(problems []string, object string) bool {
	for _, p := range problems {
		if strings.Contains(p, object) {
			return true
		}
	}
	return false
}

// storedBodyCase is a body, and whether a procedure or event with it is a door to acc.
type storedBodyCase struct {
	name, body string
	door       bool
}

// checkStoredBodies creates each case's body as an event (DISABLEd: the shared
// server's scheduler is off, and a disabled event counts) and as a procedure, in a
// fresh database each, and checks schema.Check's verdict on it.
func checkStoredBodies(t *testing.T, cases []storedBodyCase) {
	t.Helper()
	for _, c := range cases {
		for _, kind := range []string{"event", "procedure"} {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				_, admin, _ := absentMy(t)
				body := c.body
				if !strings.HasPrefix(body, "BEGIN") {
					body = "BEGIN " + body + "; END"
				}
				if kind == "event" {
					testdb.Exec(t, admin, "CREATE EVENT fx_body ON SCHEDULE EVERY 1 HOUR DISABLE DO "+body)
				} else {
					testdb.Exec(t, admin, "CREATE PROCEDURE fx_body() "+body)
				}
				problems := accCheckProblems(t, admin)
				if got := guardDoorReported(problems, "fx_body"); got != c.door {
					t.Fatalf("%s with %s: reported %v, want %v (problems: %q)", kind, c.body, got, c.door, problems)
				}
			})
		}
	}
}

// TestStoredBodyDynamicSQLWritingGuardTablesIsDoor (red-team rt47b F1): PREPARE …
// FROM a literal is judged as the literal's statement; PREPARE or EXECUTE IMMEDIATE of
// a variable, whose text cannot be read, is a door whatever it names. A literal that
// only writes another table is not.
func TestStoredBodyDynamicSQLWritingGuardTablesIsDoor(t *testing.T) {
	checkStoredBodies(t, []storedBodyCase{
		{"PrepareLiteral", "BEGIN PREPARE s FROM 'DELETE FROM fencedsql_tomb_acc'; EXECUTE s; DEALLOCATE PREPARE s; END", true},
		{"PrepareLowerTokens", "BEGIN PREPARE s FROM 'UPDATE fencedsql_tomb_acc SET fence_token = 0'; EXECUTE s; END", true},
		{"PrepareFromVariable", "BEGIN SET @fx_q = 'DELETE FROM fencedsql_tomb_acc'; PREPARE s FROM @fx_q; EXECUTE s; END", true},
		{"ExecuteImmediateVariable", "BEGIN SET @fx_q = 'DELETE FROM fencedsql_tomb_acc'; EXECUTE IMMEDIATE @fx_q; END", true},
		{"ExecuteImmediateUnnamedVariable", "BEGIN EXECUTE IMMEDIATE @fx_q; END", true},
		{"PrepareFloor", "BEGIN PREPARE s FROM 'UPDATE fencedsql_floor SET floor = 0'; EXECUTE s; END", true},
		{"PrepareGuardedTable", "BEGIN PREPARE s FROM 'UPDATE acc SET balance = 0, version = version + 1'; EXECUTE s; END", true},
		{"PrepareSwap", "BEGIN PREPARE s FROM 'RENAME TABLE fencedsql_tomb_acc TO fx_old'; EXECUTE s; END", true},
		{"FloorDirect", "UPDATE fencedsql_floor SET floor = 0", true},
		{"PrepareOtherTable", "BEGIN PREPARE s FROM 'DELETE FROM pair'; EXECUTE s; DEALLOCATE PREPARE s; END", false},
	})
}

// TestStoredBodyDDLOnGuardTablesIsDoor (red-team rt47b F2): a body that empties,
// swaps or re-engines the tombstone table or the floor by DDL is a door, as
// PostgreSQL's are (dialect.WritesGuardTable, rt29a F5). DDL on another table is not.
func TestStoredBodyDDLOnGuardTablesIsDoor(t *testing.T) {
	checkStoredBodies(t, []storedBodyCase{
		{"SwapTombstones", "BEGIN RENAME TABLE fencedsql_tomb_acc TO fx_old; CREATE TABLE fencedsql_tomb_acc LIKE fx_old; DROP TABLE fx_old; END", true},
		{"DropTombstones", "DROP TABLE fencedsql_tomb_acc", true},
		{"TombstonesToMemory", "ALTER TABLE fencedsql_tomb_acc ENGINE=MEMORY", true},
		{"SwapFloor", "BEGIN RENAME TABLE fencedsql_floor TO fx_floor_old; CREATE TABLE fencedsql_floor LIKE fx_floor_old; DROP TABLE fx_floor_old; END", true},
		{"OtherTable", "ALTER TABLE pair ENGINE=InnoDB", false},
	})
}

// TestProcedureSwappingTombstonesKeepsDeletedDeleted: the consequence of rt47b F2. A
// procedure (SQL SECURITY DEFINER, the owner's) that swaps the tombstone table for an
// empty copy must be reported; were it not, once it runs a key deleted under token 50
// is inserted again under token 30 through a fenced pool whose lazy check passes.
func TestProcedureSwappingTombstonesKeepsDeletedDeleted(t *testing.T) {
	_, admin, db := absentMy(t)
	testdb.Exec(t, admin, "CREATE PROCEDURE fx_swap() BEGIN RENAME TABLE fencedsql_tomb_acc TO fx_old; CREATE TABLE fencedsql_tomb_acc LIKE fx_old; DROP TABLE fx_old; END")
	if guardDoorReported(accCheckProblems(t, admin), "fx_swap") {
		return
	}
	if err := writeAs(db, 40, "INSERT INTO acc (id) VALUES (9)"); err != nil {
		t.Fatal(err)
	}
	if err := writeAs(db, 50, "DELETE FROM acc WHERE id = 9"); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, admin, "CALL fx_swap()")
	if err := writeAs(db, 30, "INSERT INTO acc (id) VALUES (9)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT under 30 of a key deleted under 50, after the unreported procedure swapped the tombstone table: %v, want ErrFenced", err)
	}
}

// TestProcedurePreparingTombstoneDeleteKeepsDeletedDeleted: the consequence of rt47b
// F1. A procedure that deletes the tombstones through PREPARE … FROM a literal must be
// reported; were it not, once it runs a key deleted under token 50 is inserted again
// under token 30 through the fenced pool.
func TestProcedurePreparingTombstoneDeleteKeepsDeletedDeleted(t *testing.T) {
	_, admin, db := absentMy(t)
	testdb.Exec(t, admin, "CREATE PROCEDURE fx_erase() BEGIN PREPARE s FROM 'DELETE FROM fencedsql_tomb_acc'; EXECUTE s; DEALLOCATE PREPARE s; END")
	if guardDoorReported(accCheckProblems(t, admin), "fx_erase") {
		return
	}
	if err := writeAs(db, 40, "INSERT INTO acc (id) VALUES (9)"); err != nil {
		t.Fatal(err)
	}
	if err := writeAs(db, 50, "DELETE FROM acc WHERE id = 9"); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, admin, "CALL fx_erase()")
	if err := writeAs(db, 30, "INSERT INTO acc (id) VALUES (9)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT under 30 of a key deleted under 50, after the unreported procedure erased the tombstones: %v, want ErrFenced", err)
	}
}
