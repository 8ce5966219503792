package mysql

// Statement marks: a token a statement carries, in a user variable, to the tombstone
// trigger of the rows it deletes (MariaDB and MySQL have no other channel from a
// statement to the triggers it fires). Two statements mark: the one-statement fenced
// DELETE (deletefence.go, in its WHERE clause) and every INSERT, for the rows a REPLACE
// deletes to make room for it (replacemark.go, in a BEFORE INSERT trigger).
//
// A mark is "<token>/<@@timestamp>", converted to ascii: the token as a signed number
// and the statement's start time, which names the statement — a mark an earlier
// statement left on the session is not its statement's (its time differs), and the
// tombstone trigger clears such a mark and reads 0 for it. @@timestamp is a number of
// seconds, the same in a statement and every trigger it fires whatever time_zone one
// sets; only code that sets timestamp itself moves it (each mark's users say what they
// do about that). The tombstone trigger records the greater of the row's token and the
// marks it reads, so a mark a session forges itself before its statement (SET @… :=
// …) can only raise what is recorded: an over-refusal of that key's re-insertion,
// never a miss. Code that runs inside the statement — a user's trigger or a routine it
// calls — could replace a mark between its writing and its reading with a lower one
// (red-team rt58e F2): schema.Check and the lazy check report any such body that names
// one of the library's variables (markVariableDoors, markdoor.go).

// markTime is the statement's start time as a mark writes it and the tombstone
// compares it.
const markTime = "CONCAT(@@timestamp)"

// markValue is the mark of the token expression tok: the text a statement assigns to
// its mark's variable.
func markValue(tok string) string {
	return "CONVERT(CONCAT(CAST(" + tok + " AS SIGNED), '/', " + markTime + ") USING ascii)"
}

// markCurrent is true when the mark in the user variable v is the current statement's.
func markCurrent(v string) string {
	return "SUBSTRING_INDEX(" + v + ", '/', -1) <=> " + markTime
}

// A mark set and read by triggers (the REPLACE mark) also names the database of the
// trigger that set it, "<token>/<@@timestamp>:<HEX(database)>" (DATABASE() in a
// trigger is the trigger's database): two guarded tables of one name in two databases
// share the variable's name, and a write into the other one inside the statement (a
// user's trigger) would otherwise leave its own mark where this table's tombstone
// trigger reads it (red-team rt39b F2). The tombstone trigger then reads no mark of its
// statement and clears it, and the row's AFTER INSERT trigger refuses the row
// (markLost): fail closed.
//
// The database is named by the hexadecimal digits of its name's bytes, HEX(DATABASE())
// (mark version 2, markVersion): ascii whatever the name holds, and one text per
// database. Version 1 wrote "<token>/<@@timestamp>/<database>", the name itself
// converted to ascii: in a database named with a non-ASCII letter (Dätenbank) every
// DELETE of a guarded table failed in its tombstone trigger with MariaDB's raw 1977
// under a strict sql_mode, and a non-strict one made Dätenbank and Dötenbank alike
// (D?tenbank); and the ascii comparison ignored case, so the databases Ledger and
// ledger (lower_case_table_names = 0) were one.
//
// No text of one version equals a text of another (red-team rt58e F1: with '/' after
// the time in both, a version-1 trigger in a database named 72743538… — the hex
// digits of the name rt58e… — wrote exactly what version 2 in rt58e… takes for its
// own, through the variable both versions share). What the tombstone trigger compares
// is the text after the token's '/': in version 2, "<@@timestamp>:<hex digits>",
// which holds no '/' at all (a time is digits and a point); in version 1,
// "<@@timestamp>/<name>", which always holds one right after the time. A name can hold
// any character, so no choice of database makes them equal, in either direction.
// A later version must keep that: its compared text must differ from every earlier
// version's in a position no name reaches.

// markVersion is the version of the REPLACE mark's text (markScopedOf) the tombstone
// guard installs; markVersion-1 is the previous one, still recognised as the guard's
// own until schema.Check's Fix re-creates it (tombstone.go, guardtriggers.go).
const markVersion = 2

// markScopedOf is the statement and database a trigger's mark names in mark version v,
// as it is written and compared (ascii, as the mark is): v1 "<time>/<the database's
// name>", v2 "<time>:<its hexadecimal digits>" (see above).
func markScopedOf(v int) string {
	if v < 2 {
		return "CONVERT(CONCAT(@@timestamp, '/', DATABASE()) USING ascii)"
	}
	return "CONVERT(CONCAT(@@timestamp, ':', HEX(DATABASE())) USING ascii)"
}

// markScoped is markScopedOf this version.
var markScoped = markScopedOf(markVersion)

// markValueScoped is the mark of the token expression tok set by a trigger of mark
// version v.
func markValueScoped(v int, tok string) string {
	return "CONVERT(CONCAT(CAST(" + tok + " AS SIGNED), '/', " + markScopedOf(v) + ") USING ascii)"
}

// markTokenScoped is the token the current statement marked in variable x through a
// trigger of this database (mark version v), or 0 (and x cleared, see markClear).
func markTokenScoped(v int, x string) string {
	return "IF(SUBSTRING(" + x + ", LOCATE('/', " + x + ") + 1) <=> " + markScopedOf(v) + ", CAST(SUBSTRING_INDEX(" + x + ", '/', 1) AS SIGNED), " + markClear(x) + ")"
}

// markClear is 0, and empties the mark in v: the tombstone trigger's value for a mark
// that is not its statement's.
func markClear(v string) string { return "COALESCE(" + v + " := NULL, 0)" }

// markToken is the token the current statement marked in v, or 0 (and v cleared, see
// markClear): an expression for the tombstone trigger.
func markToken(v string) string {
	return "IF(" + markCurrent(v) + ", CAST(SUBSTRING_INDEX(" + v + ", '/', 1) AS SIGNED), " + markClear(v) + ")"
}
