package dialect

// SideDoorRoutine: a stored function (a routine a statement can call without CALL)
// whose body writes the table (TriggerDoorFinder, red-team rt34c F1). A statement
// through the pool reaches it without naming the table — SELECT f(), f() in VALUES or
// a WHERE, SET @x = f(), an INSERT into another table, and on PostgreSQL also a view,
// a column DEFAULT or CHECK, a domain, an operator or attribute notation that calls it
// — so the wrapper sends it as written and the function's write is unfenced; the
// database-side guard lets through what a plain connection may do (an UPDATE that
// advances the version, an INSERT, and on MySQL/MariaDB a DELETE). No statement fixes
// it (the routine is the user's): Fix is empty, the problem says what to do.
const SideDoorRoutine SideDoorKind = "routine"

// RoutineDoorProblem is the problem of a SideDoorRoutine door, in words: routine (what
// it is and its name) writes table; reached names the statements that reach it
// through the pool; passes, what the table's guard lets through.
func RoutineDoorProblem(routine, table, reached, passes string) string {
	return routine + " writes " + table + ": a statement through the pool that calls it (" + reached +
		") does not name " + table + ", so it is sent as written and the routine's write is unfenced, with or without a token; the database-side guard lets " +
		passes + " through. Drop the routine (or remove the write from its body) and do its work through the wrapper: while it exists, guarded writes to " +
		table + " are refused"
}
