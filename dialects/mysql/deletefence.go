package mysql

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The one-statement fenced DELETE (dialect.DeleteFencer). With the guard installed,
// the wrapper sends a fenced DELETE as
//
//	DELETE FROM t WHERE (<condition>) AND (@fencedsql_delete_mark := CONVERT(CONCAT(CAST(? AS SIGNED), '/', CONCAT(@@timestamp)) USING ascii)) IS NOT NULL
//	RETURNING `db`.`fencedsql_fence_<table>`(`fence_token`, ?, (SELECT f.floor FROM `db`.`fencedsql_floor` f WHERE f.id = 1))
//
// (MariaDB 10.0.5 and later: DELETE … RETURNING) instead of a fencing UPDATE and the
// DELETE in a transaction: one round trip.
//
//   - The fence is the RETURNING call, evaluated for every deleted row after the row's
//     triggers: the function SIGNALs the token column's NOT NULL error (1048, the
//     wrapper's ErrFenced) when the row's token is newer than the statement's or NULL,
//     and the floor's refusal when the token is below the token floor (read by the
//     statement, once, and passed in). The error undoes
//     the whole statement (InnoDB). GuardDDL creates the function beside the guard's
//     triggers, UnguardDDL drops it.
//   - The mark (the user-variable assignment in the condition, true for every row it
//     is evaluated for; mark.go) carries the token and the statement's start time to
//     the tombstone trigger, which records the greater of the row's token and the marked
//     one — as it records the token the fencing UPDATE stamped in the two-statement
//     form. A mark left on the session by an earlier statement is ignored (its time
//     differs). The time is @@timestamp, seconds since the epoch: the same in the
//     statement and its triggers whatever time_zone a trigger sets in between (NOW(6)
//     as text is not: a user's trigger that set time_zone made the tombstone miss the
//     mark). The token is cast to a number and the mark converted to ascii, so that
//     the tombstone reads it whatever character_set_connection says (a red-team pass:
//     under utf32 the bound token became '?' in the mark, and the tombstone's CAST
//     failed with a raw error 1292).
//   - @@timestamp itself can be set by user code: a user's trigger on the table that
//     sets timestamp (a red-team pass) made the tombstone miss the mark and record the
//     row's older token. MariaDB has no per-statement identity that user code cannot
//     set, so the form is kept away from such code: DeleteFenceQuery says no while the
//     table has a DELETE trigger other than the tombstone's (no user code then runs
//     between the row's mark and its tombstone but the caller's own condition), and,
//     for a trigger added under a running pool's verdict or one the session's user
//     cannot see (information_schema lists the triggers of tables it has the TRIGGER
//     right on), the fence function, evaluated after the row's triggers, fails the
//     statement whole with markLostSQLState (dialect.ErrorMarkLost) when the mark is no
//     longer the statement's; and the tombstone trigger, when it finds a mark that is
//     not its statement's, clears it, so that a trigger that sets timestamp back
//     afterwards cannot hide the miss. The wrapper then sends the table's DELETEs as
//     two statements, whose tombstone reads the row's token the fencing UPDATE stamped.
//     The variable's name changed with the first fix (it was @fencedsql_delete_token),
//     so that a tombstone reading the older mark is reported, and an older wrapper
//     finds no tombstone reading its mark and sends the two statements.
//   - DeleteFenceQuery says yes when the function of this version is visible to the
//     session's user (information_schema lists only routines it may use) with its
//     body (which the lazy check compared whole, fencefunc.go; red-team rt60b F3) and
//     the table's tombstone trigger, if any, reads the mark. In the least-privilege
//     layout (fencedsql-schema -owner) the application account needs EXECUTE on the
//     function and SELECT on the floor table (reading it is harmless; the triggers
//     keep it from writing it), which PrivilegeProblems proposes, and to read the
//     function's body: it is its definer, or may read every routine (MariaDB: SELECT
//     on mysql.proc; 11.3+ SHOW CREATE ROUTINE); without them the wrapper sends the
//     two statements (safe, one round trip more).
//
// MySQL has no DELETE … RETURNING: DeleteFenceQuery says no on a server that is not
// MariaDB, and the wrapper keeps the two statements there.
const (
	// oneStepMarker is the fence function's COMMENT.
	oneStepMarker = "fencedsql one-statement delete v4"
	// deleteTokenVar is the user variable that carries the mark (mark.go).
	deleteTokenVar = "@fencedsql_delete_mark"
	// markLostSQLState is the SQLSTATE of the fence function's refusal of a statement
	// whose mark the table's triggers missed (dialect.ErrorMarkLost).
	markLostSQLState = "FNCD3"
)

var (
	// markIsCurrent is true when the mark is the current statement's.
	markIsCurrent = markCurrent(deleteTokenVar)
	// clearMark is 0, and empties the mark: the tombstone trigger's value for a mark
	// that is not its statement's.
	clearMark = markClear(deleteTokenVar)
)

func fenceFunc(name string) string { return boundedTrigger("fencedsql_fence_", name) }

func fenceFuncName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: fenceFunc(table.Name)}
}

// markedToken is the token the current statement marked, or 0 (and the mark cleared,
// see clearMark): an expression for the tombstone trigger.
var markedToken = markToken(deleteTokenVar)

// fenceFuncDDL drops and creates table's fence function. It reads no table (the
// statement passes the floor in: a stored program that opens a table costs MariaDB
// tens of microseconds per call), so it is NO SQL; it reads the session's mark and
// @@timestamp, so it is NOT DETERMINISTIC.
func (d dialectImpl) fenceFuncDDL(table dialect.TableName, tokenCol string) []string {
	fn := fenceFuncName(table).Quote(d.QuoteIdent)
	return []string{
		"DROP FUNCTION IF EXISTS " + fn,
		"CREATE FUNCTION " + fn + "(cur BIGINT, tok BIGINT, fl BIGINT) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER COMMENT " + literal(oneStepMarker) + "\nBEGIN\n" +
			"  IF cur IS NULL OR cur > tok THEN\n" +
			"    SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = " + literal("Column '"+tokenCol+"' cannot be null") + ";\n" +
			"  END IF;\n" +
			"  IF fl IS NULL OR tok < fl THEN\n" + // a floor table that lost its row refuses (as the guards do)
			"    " + floorRefusal(table.Name) + ";\n" +
			"  END IF;\n" +
			"  IF NOT (" + markIsCurrent + ") THEN\n" +
			"    SIGNAL SQLSTATE '" + markLostSQLState + "' SET MESSAGE_TEXT = " + messageWith("fencedsql: guard on ", table.Name, "the DELETE's mark was lost (a trigger set timestamp)") + ";\n" +
			"  END IF;\n" +
			"  RETURN 1;\nEND",
	}
}

// DeleteFence returns the mark and the check of the one-statement DELETE of table. The
// check passes the floor as a subquery that the statement evaluates once (it names no
// column of the row); the floor table is the one in table's database, as the guard's
// triggers read it.
func (d dialectImpl) DeleteFence(table dialect.TableName, tokenCol string) (mark, check string) {
	mark = "(" + deleteTokenVar + " := " + markValue(dialect.TokenSlot) + ") IS NOT NULL"
	floor := dialect.TableName{Schema: table.Schema, Name: dialect.FloorTable}.Quote(d.QuoteIdent)
	check = fenceFuncName(table).Quote(d.QuoteIdent) + "(" + d.QuoteIdent(tokenCol) + ", " + dialect.TokenSlot +
		", (SELECT f.floor FROM " + floor + " f WHERE f.id = 1))"
	return mark, check
}

// DeleteFenceQuery yields 1 when table's fence function of this version and the token
// floor are visible to the session's user (information_schema shows only what it has
// a right on), the function's body is readable by it — the lazy check compared it
// whole (fenceFunction); a body hidden from the account (MariaDB shows it only to its
// definer and to accounts that read every routine) was judged by nobody, and the
// routines' owner re-creating the function becomes its definer (red-team rt60b F3):
// the DELETE then runs as two statements, which rely on the guard's triggers alone —,
// the table's tombstone trigger, if any, is of this version (it clears a
// mark that is not its statement's), and the table has no other DELETE trigger (user
// code that runs between the row's mark and its tombstone).
func (dialectImpl) DeleteFenceQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT IF(EXISTS (SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("ROUTINE_SCHEMA", table.Schema) + " AND ROUTINE_NAME = ? AND ROUTINE_TYPE = 'FUNCTION' AND ROUTINE_COMMENT = ? AND COALESCE(ROUTINE_DEFINITION, '') <> '')" +
			" AND NOT EXISTS (SELECT 1 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("TRIGGER_SCHEMA", table.Schema) + " AND EVENT_OBJECT_TABLE = ? AND EVENT_MANIPULATION = 'DELETE' AND (TRIGGER_NAME <> ? OR ACTION_STATEMENT NOT LIKE ?))" +
			" AND EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ?)" +
			" AND VERSION() LIKE '%MariaDB%', 1, 0)",
		[]any{table.Schema, fenceFunc(table.Name), oneStepMarker, table.Schema, table.Name, tombName("del", table.Name), markPattern, table.Schema, dialect.FloorTable}
}

// DeleteFenceExec: go-sql-driver/mysql reports 0 rows affected for a statement that returns rows.
func (dialectImpl) DeleteFenceExec() bool { return false }

var _ dialect.DeleteFencer = dialectImpl{}
