package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func myQuote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

const myStockCols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"

// TestGuardObjectsOfAnotherTableNotWritersOfWordNamedTable (red-team rt56a F1 on
// MariaDB): the door checks' word test read the stock absence recorder of another
// guarded table (INSERT INTO … VALUES … ON DUPLICATE KEY UPDATE … GREATEST(…); IF
// EXISTS (SELECT 1 FROM … x WHERE …) THEN SIGNAL SQLSTATE … SET MESSAGE_TEXT …) and its
// tombstone triggers (… VALUES (OLD.…) …; … FROM … t WHERE … NEW.…) as writers of a
// guarded table named like one of their words: every write of that table through a
// pool was refused with ErrSchema, and its -apply dropped the other table's tombstone
// triggers (the trigger door's Fix), which the other table's Check then reported. A
// stock guard object, judged whole, writes its tombstone table only. Want: -apply OK
// for both tables, the current token's write accepted, a stale one ErrFenced.
func TestGuardObjectsOfAnotherTableNotWritersOfWordNamedTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, "CREATE TABLE accounts"+myStockCols)
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
		t.Fatal(err, fencetest.ReportProblems(reps))
	}
	words := []string{"key", "x", "values", "set", "if", "then", "into", "from", "where", "signal", "sqlstate", "message_text", "greatest", "duplicate", "old", "new", "t", "mode"}
	rng := rand.New(rand.NewSource(5610))
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	for _, w := range append([]string{"key", "old"}, words[:3]...) {
		if _, err := raw.ExecContext(ctx, "CREATE TABLE "+myQuote(w)+myStockCols); err != nil {
			continue // picked twice
		}
		if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: w}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Errorf("table %q next to the guarded accounts: -apply: %v %.300q", w, err, fencetest.ReportProblems(reps))
		}
		if reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Errorf("accounts after the -apply of %q: Check: %v %.300q", w, err, fencetest.ReportProblems(reps))
		}
		pool := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts,"+w))
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+myQuote(w)+" (id, balance) VALUES (1, 1)"); err != nil {
			t.Errorf("table %q: the current token's INSERT: %.300v", w, err)
		} else if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 90), "UPDATE "+myQuote(w)+" SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("table %q: stale UPDATE: %v; want ErrFenced", w, err)
		}
		pool.Close()
	}
	// A table whose recorder's name is cut and hashed (tombName): its table is found by
	// the cut part, and the recorder is judged whole as well.
	long := "accounts_with_a_long_name_" + strings.Repeat("z", 30)
	testdb.Exec(t, raw, "CREATE TABLE "+myQuote(long)+myStockCols)
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: long}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
		t.Fatal(err, fencetest.ReportProblems(reps))
	}
	if reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "key"}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
		t.Errorf("key next to the guarded %s: Check: %v %.300q", long, err, fencetest.ReportProblems(reps))
	}
}

// TestUserBodiesWritingWordNamedTableStillDoors: what rt56a F1's fix recognises is
// only the stock guard object as installed, whole. A user's trigger on another table,
// a user's procedure, and another table's tombstone trigger changed to write the table
// too — each writing a guarded table named key — are still doors of it (Check reports
// them; the pool refuses).
func TestUserBodiesWritingWordNamedTableStillDoors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn, "CREATE TABLE accounts"+myStockCols, "CREATE TABLE `key`"+myStockCols, "CREATE TABLE audit (id BIGINT PRIMARY KEY) ENGINE=InnoDB")
	for _, tbl := range []string{"accounts", "key"} {
		if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: tbl}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Fatal(err, fencetest.ReportProblems(reps))
		}
	}
	var stockDel string
	if err := raw.QueryRowContext(ctx, "SELECT ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME = 'fencedsql_tombdel_accounts'").Scan(&stockDel); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(stockDel, "ELSE\n", "ELSE\n  UPDATE `key` SET balance = 0;\n", 1)
	if changed == stockDel {
		t.Fatalf("the stock DELETE trigger has no ELSE: %s", stockDel)
	}
	cases := []fencetest.DoorCase{
		{Name: "a user's trigger on another table",
			Setup: []string{"CREATE TRIGGER audit_copy AFTER INSERT ON audit FOR EACH ROW INSERT INTO `key` (id) VALUES (NEW.id)"},
			Kind:  dialect.SideDoorTrigger, Undo: []string{"DROP TRIGGER audit_copy"}},
		{Name: "a user's procedure",
			Setup: []string{"CREATE PROCEDURE reset_key() UPDATE `key` SET balance = 0"},
			Kind:  dialect.SideDoorRoutine, Undo: []string{"DROP PROCEDURE reset_key"}},
		{Name: "another table's tombstone trigger changed",
			Setup: []string{"DROP TRIGGER fencedsql_tombdel_accounts", "CREATE TRIGGER fencedsql_tombdel_accounts AFTER DELETE ON accounts FOR EACH ROW\n" + changed},
			Kind:  dialect.SideDoorTrigger, Undo: []string{"DROP TRIGGER fencedsql_tombdel_accounts", "CREATE TRIGGER fencedsql_tombdel_accounts AFTER DELETE ON accounts FOR EACH ROW\n" + stockDel}},
	}
	fencetest.ExpectDoors(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "key"},
		func() *sql.DB {
			return testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts,key"))
		},
		"UPDATE `key` SET balance = 1 WHERE id = 1", cases)
}
