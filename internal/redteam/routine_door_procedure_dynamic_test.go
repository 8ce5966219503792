// Routines the routine door must judge beyond a function whose own statement writes
// the table (red-team rt36b F1, F2): a procedure a function CALLs, and PostgreSQL
// dynamic SQL whose text sits in a literal apart from the EXECUTE, or is spelled with
// escapes (dialects/postgres/routinedoor.go, dialects/mysql/routinedoor.go).

package redteam

import "testing"

// TestRoutineDoorProcedureAndDynamicSQLPostgres: each function below changes accounts
// from a plain `SELECT f()` through the pool (shown on the raw driver by the harness),
// so the routine door must refuse the fenced pool's guarded writes:
//
//   - calls_procedure: the function CALLs a procedure that UPDATEs accounts; the
//     function's own body does not name the table, the procedure is the door (a
//     function reaches it with no CALL statement from the pool).
//   - execute_variable: the statement is a literal in a DECLARE
//     (q text := 'UPDATE accounts …'), then EXECUTE q: the name and EXECUTE are in two
//     statements.
//   - execute_e_string: EXECUTE E'UPDATE \x61ccounts …' — an escape-string literal
//     spelling the name with an escape (and passing the catalog pre-filter).
//   - execute_u_string: EXECUTE U&'UPDATE \0061ccounts …' — a Unicode-escape literal.
//
// Controls: a function with EXECUTE of a statement on another table, and a procedure
// that only reads accounts, are no doors.
func TestRoutineDoorProcedureAndDynamicSQLPostgres(t *testing.T) {
	routineDoorRefused(t, postgresBackend(), []routineCase{
		{"calls_procedure", []string{
			"CREATE PROCEDURE wipep() LANGUAGE sql AS $$ UPDATE accounts SET balance = 0 $$",
			"CREATE FUNCTION fcall() RETURNS int LANGUAGE plpgsql AS $$ BEGIN CALL wipep(); RETURN 1; END $$",
		}, []string{"SELECT fcall()"}, "procedure public.wipep()"},
		{"execute_variable", []string{
			"CREATE FUNCTION fq() RETURNS int LANGUAGE plpgsql AS $$ DECLARE q text := 'UPDATE accounts SET balance = 1'; BEGIN EXECUTE q; RETURN 1; END $$",
		}, []string{"SELECT fq()"}, "fq"},
		{"execute_e_string", []string{
			`CREATE FUNCTION fe() RETURNS int LANGUAGE plpgsql AS $$ BEGIN EXECUTE E'UPDATE \x61ccounts SET balance = 2'; RETURN 1; END $$`,
		}, []string{"SELECT fe()"}, "fe"},
		{"execute_u_string", []string{
			`CREATE FUNCTION fu() RETURNS int LANGUAGE plpgsql AS $$ BEGIN EXECUTE U&'UPDATE \0061ccounts SET balance = 3'; RETURN 1; END $$`,
		}, []string{"SELECT fu()"}, "fu"},
	})
	pg := postgresBackend()
	routineNotDoor(t, pg, "execute_other_table", "CREATE FUNCTION fo() RETURNS int LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'UPDATE ledger SET note = ''x'''; RETURN 1; END $$")
	routineNotDoor(t, pg, "procedure_reads_only", "CREATE PROCEDURE pr() LANGUAGE plpgsql AS $$ DECLARE n bigint; BEGIN SELECT count(*) INTO n FROM accounts; END $$")
}

// TestRoutineDoorProcedureMariaDB: a stored function that CALLs a procedure which
// UPDATEs accounts changes accounts from `SELECT f()` (raw driver); the function's body
// does not name the table, so the procedure is the door the pool's guarded writes are
// refused for.
func TestRoutineDoorProcedureMariaDB(t *testing.T) {
	routineDoorRefused(t, mysqlBackend(), []routineCase{
		{"calls_procedure", []string{
			"CREATE PROCEDURE wipep() MODIFIES SQL DATA UPDATE accounts SET balance = 0",
			"CREATE FUNCTION fcall() RETURNS INT MODIFIES SQL DATA BEGIN CALL wipep(); RETURN 1; END",
		}, []string{"SELECT fcall()"}, "procedure "},
	})
}
