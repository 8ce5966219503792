// Routines that write a guarded table, reached without CALL (red-team rt34c F1): a
// stored function whose body writes accounts runs unseen through the fenced pool
// whenever a statement reaches it without naming the table, and the database-side
// guard does not stop its write when it advances the version (or, on MariaDB,
// deletes). Such a function is a door (dialect.SideDoorRoutine): the lazy check
// refuses the pool's guarded writes with ErrSchema while it exists, as it refuses a
// trigger of another table that writes the table.

package redteam

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// routineCase is one route to a routine that writes accounts: the objects a migration
// creates on the raw driver (the routine, and what calls it), the statements that
// reach it, and the routine the door must name.
type routineCase struct {
	name    string
	setup   []string // raw driver, before (the migration's objects)
	steps   []string // the statements that reach the routine without CALL
	routine string   // the routine's name, as the door names it
}

// fencedProbe is the guarded write the lazy check runs before: a plain single-row
// UPDATE of accounts that a fresh token's pool would otherwise fence and send.
const fencedProbe = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"

// routineDoorRefused: for each case, the steps first change accounts on the raw
// driver (so the routine is reachable without CALL and writes the table); then, on a
// fresh database with the same objects, a fenced pool's first guarded write — with
// the fresh token, which would pass the fence — is refused with ErrSchema naming the
// routine as a "routine" door, and nothing changes.
func routineDoorRefused(t *testing.T, b backend, cases []routineCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := entry{class: "routine door", name: c.name, setup: c.setup}
			for _, st := range c.steps {
				e.steps = append(e.steps, s(st))
			}
			raw := freshDB(t, b, e)
			before := raw.snap()
			plain, _ := raw.open(false, nil)
			if r := run(raw.ctx, plain, e); r.err != nil {
				t.Fatalf("case wrong: step %d fails on the raw driver: %v", r.at+1, r.err)
			}
			if guardedDiff(before, raw.snap()) == "" {
				t.Fatalf("case wrong: accounts unchanged on the raw driver")
			}

			d := freshDB(t, b, entry{class: e.class, name: e.name, setup: c.setup})
			base := d.snap()
			w, _ := d.open(true, nil)
			_, err := w.ExecContext(tokenCtx(d.ctx, freshToken), fencedProbe)
			if df := diff(base, d.snap()); df != "" {
				t.Fatalf("the fenced write changed data (err=%v):\n%s", err, indent(df))
			}
			var se *fencedsql.SchemaError
			if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) {
				t.Fatalf("FAIL-OPEN on %s: a routine that writes accounts exists (%s reaches it unfenced), but the pool's guarded write got err=%v, want ErrSchema naming the routine door",
					b.name, strings.Join(c.steps, "; "), err)
			}
			if !strings.Contains(se.Problem, string(dialect.SideDoorRoutine)+" ") || !strings.Contains(se.Problem, c.routine) {
				t.Errorf("ErrSchema for another reason: %v; want the routine door naming %s", err, c.routine)
			}
		})
	}
}

// routineNotDoor: a routine that only reads accounts (or names it outside a write) is
// no door: the fenced pool's guarded write passes (fresh token, fenced and sent).
func routineNotDoor(t *testing.T, b backend, name string, setup ...string) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		d := freshDB(t, b, entry{class: "routine door", name: name, setup: setup})
		w, _ := d.open(true, nil)
		if _, err := w.ExecContext(tokenCtx(d.ctx, freshToken), fencedProbe); err != nil {
			t.Fatalf("OVER-REFUSAL on %s: a routine that does not write accounts made the guarded write fail: %v", b.name, err)
		}
	})
}

// TestRoutineWritingGuardedTablePostgres: a function created by a migration whose body
// writes accounts, reached without CALL — a plain SELECT of it (also one that reads
// the guarded table itself), a CTE, VALUES, FROM, a WHERE, attribute notation
// (l.wipe), a cast to a domain whose CHECK calls it, a user operator, a view, a column
// DEFAULT or CHECK constraint of an unguarded table, ALTER TABLE … ADD COLUMN …
// DEFAULT, UPDATE … FROM, EXPLAIN ANALYZE, SELECT … INTO, TABLESAMPLE — changes
// accounts with no fence (shown on the raw driver); the routine is a door, so the
// pool's guarded writes are refused (ErrSchema) while it exists. Bodies: SQL,
// PL/pgSQL, an SQL-standard body, dynamic SQL.
func TestRoutineWritingGuardedTablePostgres(t *testing.T) {
	fn := "CREATE FUNCTION zero_all() RETURNS bigint LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 RETURNING 1 $$"
	fnRow := "CREATE FUNCTION wipe(ledger) RETURNS bigint LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 WHERE id = $1.account_id RETURNING 1 $$"
	fnBool := "CREATE FUNCTION wipeb(text) RETURNS boolean LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 RETURNING true $$"
	fnOp := "CREATE FUNCTION wipeop(int, int) RETURNS int LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 RETURNING 1 $$"
	fnStd := "CREATE FUNCTION zero_std() RETURNS bigint LANGUAGE sql BEGIN ATOMIC UPDATE accounts SET balance = 0; SELECT 1; END"
	fnPl := "CREATE FUNCTION zero_pl() RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DELETE FROM accounts'; RETURN 1; END $$"
	routineDoorRefused(t, postgresBackend(), []routineCase{
		{"select_fn", []string{fn}, []string{"SELECT zero_all()"}, "zero_all"},
		{"select_fn_from_guarded", []string{fn}, []string{"SELECT zero_all() FROM accounts WHERE id = 1"}, "zero_all"},
		{"select_fn_in_cte", []string{fn}, []string{"WITH a AS (SELECT zero_all() AS z) SELECT z FROM a"}, "zero_all"},
		{"values_fn", []string{fn}, []string{"VALUES (zero_all())"}, "zero_all"},
		{"from_fn", []string{fn}, []string{"SELECT * FROM zero_all()"}, "zero_all"},
		{"where_fn", []string{fn}, []string{"SELECT * FROM ledger WHERE zero_all() > 0"}, "zero_all"},
		{"attribute_notation", []string{fnRow}, []string{"SELECT l.wipe FROM ledger l"}, "wipe"},
		{"domain_check_cast", []string{fnBool, "CREATE DOMAIN dwipe AS text CHECK (wipeb(VALUE))"}, []string{"SELECT 'x'::dwipe"}, "wipeb"},
		{"user_operator", []string{fnOp, "CREATE OPERATOR ### (FUNCTION = wipeop, LEFTARG = int, RIGHTARG = int)"}, []string{"SELECT 1 ### 2"}, "wipeop"},
		{"view_calling_fn", []string{fn, "CREATE VIEW lv AS SELECT zero_all() AS z"}, []string{"SELECT * FROM lv"}, "zero_all"},
		{"default_of_unguarded", []string{fn, "ALTER TABLE ledger ADD COLUMN z bigint", "ALTER TABLE ledger ALTER COLUMN z SET DEFAULT zero_all()"}, []string{"INSERT INTO ledger (id, account_id) VALUES (9, 1)"}, "zero_all"},
		{"check_of_unguarded", []string{fnBool, "ALTER TABLE ledger ADD CONSTRAINT ck CHECK (wipeb(note)) NOT VALID"}, []string{"UPDATE ledger SET note = 'z' WHERE id = 1"}, "wipeb"},
		{"add_column_default_unguarded", []string{fn}, []string{"ALTER TABLE ledger ADD COLUMN z bigint DEFAULT zero_all()"}, "zero_all"},
		{"update_from_fn", []string{fn}, []string{"UPDATE ledger SET note = 'x' FROM zero_all() z"}, "zero_all"},
		{"explain_analyze_select_fn", []string{fn}, []string{"EXPLAIN ANALYZE SELECT zero_all()"}, "zero_all"},
		{"select_into_from_fn", []string{fn}, []string{"SELECT zero_all() INTO TEMP t34"}, "zero_all"},
		{"tablesample_fn", []string{fn}, []string{"SELECT * FROM ledger TABLESAMPLE SYSTEM (zero_all())"}, "zero_all"},
		{"sql_standard_body", []string{fnStd}, []string{"SELECT zero_std()"}, "zero_std"},
		{"plpgsql_dynamic_delete", []string{fnPl}, []string{"SELECT zero_pl()"}, "zero_pl"},
	})
	// Controls: reading the table, taking its row type (an SQL-standard body, whose
	// definition's header reads CREATE OR REPLACE … accounts), naming it in a string
	// only, a trigger function (judged as a trigger when attached) are no doors.
	pg := postgresBackend()
	routineNotDoor(t, pg, "reads_only", "CREATE FUNCTION total() RETURNS bigint LANGUAGE sql AS $$ SELECT sum(balance) FROM accounts $$")
	routineNotDoor(t, pg, "row_type_standard_body", "CREATE FUNCTION bal(a accounts) RETURNS bigint LANGUAGE sql RETURN a.balance")
	routineNotDoor(t, pg, "plpgsql_reads_writes_other", "CREATE FUNCTION note() RETURNS bigint LANGUAGE plpgsql AS $$ DECLARE n bigint; BEGIN SELECT count(*) INTO n FROM accounts; UPDATE ledger SET note = n::text; RETURN n; END $$")
	routineNotDoor(t, pg, "unattached_trigger_function", "CREATE FUNCTION trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = 0; RETURN NEW; END $$")
}

// TestRoutineWritingGuardedTableMariaDB: the MariaDB form: a stored function that
// writes accounts, called from SELECT, SET, a WHERE, VALUES or an INSERT into an
// unguarded table, changes accounts with no fence (shown on the raw driver); it is a
// door, so the pool's guarded writes are refused (ErrSchema) while it exists.
func TestRoutineWritingGuardedTableMariaDB(t *testing.T) {
	fn := "CREATE FUNCTION wipe() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = 0; RETURN 1; END"
	routineDoorRefused(t, mysqlBackend(), []routineCase{
		{"select_fn", []string{fn}, []string{"SELECT wipe()"}, "wipe"},
		{"set_var_fn", []string{fn}, []string{"SET @x = wipe()"}, "wipe"},
		{"where_fn", []string{fn}, []string{"SELECT * FROM ledger WHERE wipe() = 1"}, "wipe"},
		{"values_fn", []string{fn}, []string{"VALUES (wipe())"}, "wipe"},
		{"insert_unguarded_fn", []string{fn}, []string{"INSERT INTO ledger (id, account_id, amount) VALUES (9, 1, wipe())"}, "wipe"},
	})
	my := mysqlBackend()
	routineNotDoor(t, my, "reads_only", "CREATE FUNCTION total() RETURNS BIGINT READS SQL DATA RETURN (SELECT SUM(balance) FROM accounts)")
	routineNotDoor(t, my, "procedure_reads_only", "CREATE PROCEDURE totalp() BEGIN SELECT SUM(balance) FROM accounts; END")
}

// TestRoutineWritingGuardedTablePastGuard: with the real database-side guard installed
// (the dialect's GuardDDL), a routine that advances the version as it writes — what
// any plain connection may do — changes every row from a `SELECT wipe()` (PostgreSQL
// and MariaDB UPDATE; on MariaDB, whose guard does not cover DELETE, a DELETE too), so
// the guard is no defence against the routine class: the routine is a door, and the
// pool's guarded writes are refused (ErrSchema); the guard's own functions are not.
func TestRoutineWritingGuardedTablePastGuard(t *testing.T) {
	pg := postgresBackend()
	g := pg.dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	fn := "CREATE FUNCTION zero_all() RETURNS bigint LANGUAGE sql AS $$ UPDATE accounts SET balance = 0, version = version + 1 RETURNING 1 $$"
	routineDoorRefused(t, pg, []routineCase{
		{"postgres_guarded_update_in_select", append(append([]string{}, g...), fn), []string{"SELECT zero_all()"}, "zero_all"},
	})
	routineNotDoor(t, pg, "postgres_guard_alone", g...)
	my := mysqlBackend()
	gm := my.dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	fu := "CREATE FUNCTION wipe() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = 0, version = version + 1; RETURN 1; END"
	fd := "CREATE FUNCTION wiped() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM accounts WHERE id = 1; RETURN 1; END"
	routineDoorRefused(t, my, []routineCase{
		{"mariadb_guarded_update_in_select", append(append([]string{}, gm...), fu), []string{"SELECT wipe()"}, "wipe"},
		{"mariadb_guarded_delete_in_select", append(append([]string{}, gm...), fd), []string{"SELECT wiped()"}, "wiped"},
	})
	routineNotDoor(t, my, "mariadb_guard_alone", gm...)
}
