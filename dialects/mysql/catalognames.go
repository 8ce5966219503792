package mysql

// sameName is the SQL condition that the information_schema name columns a and b
// (TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME of two catalog views) hold the same name byte
// for byte (red-team rt56a F2). information_schema compares its name columns under
// utf8mb3_general_ci, which folds case and accents, while with lower_case_table_names
// = 0 (the Linux default) acc, Acc, Ácc and àcc are four tables (and a database's
// names likewise), and a table may hold the columns id and íd: a correlated join
// c.TABLE_NAME = k.TABLE_NAME read the guarded table's key column once more for every
// twin table that has a column of that name. The catalog spells a table's (and a
// column's) name the same way in every view, so the byte comparison loses nothing
// under any lower_case_table_names. A name given by the configuration is still
// compared with = (the server resolves it as it resolves the statement's: with
// lower_case_table_names = 1 the catalog holds accounts for the configured
// Accounts), and each joined view is also restricted by those constant names, so that
// information_schema opens only that table (a name that is only correlated makes it
// scan every table of the database).
func sameName(a, b string) string {
	return "CAST(" + a + " AS BINARY) = CAST(" + b + " AS BINARY)"
}
