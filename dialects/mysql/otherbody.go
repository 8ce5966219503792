package mysql

// The door checks read the stored bodies of every database, not only the guarded
// table's (red-team rt48b F1): a procedure or event of another database whose dynamic
// SQL cannot be read (EXECUTE IMMEDIATE q, PREPARE s FROM @q) runs a text chosen at
// run time, which may name the guarded table's database — CALL
// other.run('DELETE FROM `db`.fencedsql_tomb_acc') deleted tombstones with the
// routine's DEFINER rights while its body named neither the database nor a table.

// dynamicWordsSQL is the catalog condition that the stored body in column col may hold
// dynamic SQL as dynamicTexts reads it: the words prepare or execute, or a CALL of a
// routine of the server's own databases (the words sys, mysql). A word test on the
// lower-cased text: it lists more bodies than hold dynamic SQL, which are then judged
// (rowWrites).
func dynamicWordsSQL(col string) string {
	return "(LOCATE('prepare', LOWER(" + col + ")) > 0 OR LOCATE('execute', LOWER(" + col + ")) > 0 OR LOCATE('sys', LOWER(" + col + ")) > 0 OR LOCATE('mysql', LOWER(" + col + ")) > 0)"
}

// rowWrites judges the stored body def of a catalog row (sql_mode mode) as a writer of
// the table name (guard: a guard table, as bodyWrites). named: the body is in the
// guarded table's database or names it — then it is judged in full (writesAsStored).
// A body of another database that does not name it is judged by its dynamic SQL alone
// (dynamicUnread): its static statements, and the literal texts of its dynamic SQL,
// name their tables unqualified or qualified with another database (its unqualified
// names are its own database's, a tenant's table named like a guarded one is not the
// guarded one), but a text it cannot read may name any database.
func rowWrites(def, mode, name string, guard, named bool) bool {
	if !named {
		return dynamicUnread(def)
	}
	return writesAsStored(def, mode, name, guard)
}

// rowNamed reports whether column i of a ROUTINES row (routines' query) says the
// routine is in the guarded table's database or its body names it; true when the row
// has no such column (judged in full).
func rowNamed(r []string, i int) bool {
	return i >= len(r) || r[i] != "0"
}
