package mysql

import (
	"encoding/hex"
	"strings"
)

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

// exactDatabase is the SQL condition, to be ANDed to the catalog's comparison of its
// schema column col (TRIGGER_SCHEMA, ROUTINE_SCHEMA, EVENT_SCHEMA, …) with the
// guarded table's database (schema, "" for the connection's database), that col
// names that database byte for byte where the server keeps names' case
// (lower_case_table_names = 0, the Linux default): there t_x and T_X are two
// databases, and the same guarded table may be installed in both, but
// information_schema compares its schema columns under utf8mb3_general_ci, and
// TRIGGERS (whose TRIGGER_SCHEMA is not a lookup column) and a comparison in a select
// list match both twins — the Check of one twin read the other's guard objects as its
// own (its absence recorder "not its text"), and the lazy check of one pool the other's.
// Under lower_case_table_names 1 or 2 the server resolves database names
// case-insensitively, and the catalog's = stays the comparison. The database is
// named by its bytes (a hexadecimal literal: no quoting, no sql_mode, and no
// parameter, so that a query's arguments stay as they were), or by DATABASE().
func exactDatabase(col, schema string) string {
	return "(@@lower_case_table_names <> 0 OR CAST(" + col + " AS BINARY) = CAST(" + databaseBytes(schema) + " AS BINARY))"
}

// exactTable is exactDatabase for a catalog table-name column col (TABLE_NAME,
// REFERENCED_TABLE_NAME, …) and the table name name: where the server keeps names'
// case, acc and Acc are two tables, which information_schema's = does not tell
// apart.
func exactTable(col, name string) string {
	return "(@@lower_case_table_names <> 0 OR CAST(" + col + " AS BINARY) = CAST(X'" + hex.EncodeToString([]byte(name)) + "' AS BINARY))"
}

// exactMention is the SQL condition, to be ANDed to a case-insensitive search of the
// text body (a trigger's, routine's or event's definition) for the guarded table's
// database (schema, "" for the connection's database), that body holds the
// database's name byte for byte where the server keeps names' case
// (lower_case_table_names = 0): an object of another database reaches the table
// only by naming its database, and there `T_X`.t is not t_x.t (exactDatabase).
func exactMention(body, schema string) string {
	return "(@@lower_case_table_names <> 0 OR LOCATE(CAST(" + databaseBytes(schema) + " AS BINARY), CAST(" + body + " AS BINARY)) > 0)"
}

// databaseBytes is the SQL of schema's name ("" for the connection's database): a
// hexadecimal literal of its bytes, or DATABASE().
func databaseBytes(schema string) string {
	if schema == "" {
		return "DATABASE()"
	}
	return "X'" + hex.EncodeToString([]byte(schema)) + "'"
}

// correlatedDatabase is the condition, " AND …" to be appended to the comparison of
// the catalog schema column col with the SQL expression db, that they hold the same
// name byte for byte where the server keeps names' case (exactDatabase) — for a db
// read from another view's row (GuardFloorsQuery's fl.db), which information_schema
// compares under utf8mb3_general_ci, so that the floor table of `T_X` was judged by
// t_x's. A db holding a parameter is a lookup value (information_schema opens that
// database alone), and its expression is not repeated (its argument would be bound
// twice): "" for it.
func correlatedDatabase(col, db string) string {
	if strings.Contains(db, "?") {
		return ""
	}
	return " AND (@@lower_case_table_names <> 0 OR CAST(" + col + " AS BINARY) = CAST(" + db + " AS BINARY))"
}
