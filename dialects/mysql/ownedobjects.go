package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The objects the dialect derives from a guarded table's name (boundedTrigger) — the
// guard's and the tombstone guard's triggers and their shadows, the tombstone table,
// the absence recorder — are installed over an object of their name: DROP TRIGGER IF
// EXISTS, CREATE TABLE IF NOT EXISTS, DROP PROCEDURE IF EXISTS. Two tables must never
// share one (red-team rt56a F5: PostgreSQL's derived names of two long table names
// with the same 32-bit hash were shared, and the second table's install replaced the
// first's guard; the MySQL/MariaDB names carried the same hash). The hash is 64 bits
// now; and the install of a table refuses first (ownedCheck: SQLSTATE 42S01, error
// 1050, nothing of it is created or dropped) when an object of one of its hashed
// derived names belongs to another table:
//
//   - a trigger on another table (information_schema.TRIGGERS.EVENT_OBJECT_TABLE: a
//     trigger's table is part of it, so no mark is needed);
//   - a tombstone table not marked for this table (TombstoneDDL creates it with the
//     table COMMENT ownedMarkText; no release before this one created a table of a
//     64-bit hashed name, so one without the mark is another's);
//   - an absence recorder whose text does not name this table's tombstone table (the
//     recorder's COMMENT is its version marker; its text names the tombstone table it
//     writes, whose own name the check above keeps to this table). An account that may
//     not read the text (MariaDB shows it to the definer and to accounts with SELECT on
//     mysql.proc or SHOW CREATE ROUTINE) is refused too: it fails closed.
//
// And, for every name, the absence recorder of a case twin: routine names are
// case-insensitive in MariaDB and MySQL while, under lower_case_table_names = 0, Acc and
// acc are two tables (whose triggers and tombstone tables keep their names' case), so
// a procedure fencedsql_tombclaim_acc spelled otherwise than this table's recorder
// name is a twin's recorder, which this install would replace by its own (G9 "Case
// twins"): the twin that installs second is refused.
//
// Otherwise only hashed names are checked (a name of hashedShape: the 64-character limit, "_"
// and 16 hex digits): an unhashed name is its table's name and prefix, and the one
// other table that may hold it is a table renamed away with its triggers (RENAME TABLE
// keeps them), whose tombstones the carry-over (tombcarry.go) moves as before. The one-
// statement DELETE's fence function is not checked: it reads nothing of its table (the
// statement passes the token, the row's token and the floor in; the table's name is
// in its messages only), so a shared one checks each table alike.
//
// MySQL has no anonymous block (MariaDB's BEGIN NOT ATOMIC), and the statements are
// the same for both servers: the check is a procedure created, called and dropped by
// the install, named for the table (fencedsql_owncheck_<table>), SQL SECURITY INVOKER
// (it reads the catalog with the installer's rights). A refusal leaves the procedure
// behind (a routine cannot drop itself); it reads the catalog only, and the next
// install drops it first. The refusal's message names the object and the table (cut
// to MESSAGE_TEXT's 128 characters); the whole Fix stops there.

// ownedMarker begins the mark of a derived object (the tombstone table's COMMENT).
const ownedMarker = "fencedsql: derived from the guarded table "

// ownedMarkText is the mark of the objects derived from table name.
func ownedMarkText(name string) string { return ownedMarker + name }

// hashedShape reports whether name has the shape of a hashed derived name
// (boundedTrigger): maxIdentLen characters ending in "_" and 16 lower-case hex digits.
func hashedShape(name string) bool {
	r := []rune(name)
	n := len(hashSuffix(""))
	if len(r) != maxIdentLen || r[len(r)-n] != '_' {
		return false
	}
	for _, c := range r[len(r)-n+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ownedObjects are the names an install of table derives and checks: its triggers
// (each with its shadow, replaceTrigger) and, with tomb, its tombstone table and
// absence recorder.
type ownedObjects struct {
	triggers []string
	tomb     bool
}

// ownedCheck returns the statements an install runs before anything else for table:
// they refuse (SIGNAL SQLSTATE '42S01', error 1050) when an object of one of the
// hashed names of objs, or its recorder's name in another spelling, belongs to another
// table (see above), and leave nothing behind. None when no name of objs is hashed and
// objs holds no recorder.
func (d dialectImpl) ownedCheck(table dialect.TableName, objs ownedObjects) []string {
	var trig []string
	for _, t := range objs.triggers {
		for _, n := range []string{t, boundedTrigger(shadowPrefix, t)} {
			if hashedShape(n) {
				trig = append(trig, literal(n))
			}
		}
	}
	var found []string
	db := "DATABASE()"
	if table.Schema != "" {
		db = literal(table.Schema)
	}
	if len(trig) > 0 {
		found = append(found, "SELECT CONVERT(CONCAT('trigger ', t.TRIGGER_NAME, ' on ', t.EVENT_OBJECT_TABLE) USING utf8mb4) AS o FROM information_schema.TRIGGERS t"+
			" WHERE t.TRIGGER_SCHEMA = "+db+" AND "+exactDatabase("t.TRIGGER_SCHEMA", table.Schema)+" AND t.TRIGGER_NAME IN ("+strings.Join(trig, ", ")+") AND NOT (t.EVENT_OBJECT_TABLE = "+literal(table.Name)+")")
	}
	if tomb := tombTable(table).Name; objs.tomb && hashedShape(tomb) {
		found = append(found, "SELECT CONVERT(CONCAT('table ', t.TABLE_NAME, ' (', IF(t.TABLE_COMMENT = '', 'not marked as any table''s', t.TABLE_COMMENT), ')') USING utf8mb4) FROM information_schema.TABLES t"+
			" WHERE t.TABLE_SCHEMA = "+db+" AND t.TABLE_NAME = "+literal(tomb)+" AND NOT (t.TABLE_COMMENT = "+literal(ownedMarkText(table.Name))+")")
	}
	if proc := absenceProc(table.Name); objs.tomb && hashedShape(proc) {
		found = append(found, "SELECT CONVERT(CONCAT('procedure ', r.ROUTINE_NAME) USING utf8mb4) FROM information_schema.ROUTINES r"+
			" WHERE r.ROUTINE_SCHEMA = "+db+" AND "+exactDatabase("r.ROUTINE_SCHEMA", table.Schema)+" AND r.ROUTINE_NAME = "+literal(proc)+" AND r.ROUTINE_TYPE = 'PROCEDURE'"+
			" AND COALESCE(LOCATE("+literal(d.QuoteIdent(tombTable(table).Name))+", r.ROUTINE_DEFINITION), 0) = 0")
	}
	if proc := absenceProc(table.Name); objs.tomb {
		// Routine names are case-insensitive: the recorder of a case twin (Acc next to
		// acc, lower_case_table_names = 0) has this one's name in another spelling.
		found = append(found, "SELECT CONVERT(CONCAT('procedure ', r.ROUTINE_NAME) USING utf8mb4) AS o FROM information_schema.ROUTINES r"+
			" WHERE r.ROUTINE_SCHEMA = "+db+" AND "+exactDatabase("r.ROUTINE_SCHEMA", table.Schema)+" AND r.ROUTINE_NAME = "+literal(proc)+
			" AND CAST(r.ROUTINE_NAME AS BINARY) <> CAST("+literal(proc)+" AS BINARY)")
	}
	if len(found) == 0 {
		return nil
	}
	// Each arm's text is converted to one character set, so that the UNION does not
	// mix the catalog's collations (utf8mb3 on MariaDB, others on MySQL 8).
	proc := dialect.TableName{Schema: table.Schema, Name: boundedTrigger("fencedsql_owncheck_", table.Name)}.Quote(d.QuoteIdent)
	// MESSAGE_TEXT holds 128 characters: the object first, the table's name after it.
	msg := "LEFT(CONCAT('fencedsql: another table''s ', other, ' has a name derived from ', " + literal(table.Name) + "), 128)"
	return []string{
		"DROP PROCEDURE IF EXISTS " + proc,
		"CREATE PROCEDURE " + proc + "() READS SQL DATA SQL SECURITY INVOKER\nBEGIN\n" +
			"  DECLARE other TEXT;\n  DECLARE msg TEXT;\n" +
			"  SET other = (SELECT x.o FROM (" + strings.Join(found, " UNION ALL ") + ") x LIMIT 1);\n" +
			"  IF other IS NOT NULL THEN\n" +
			"    SET msg = " + msg + ";\n" +
			"    SIGNAL SQLSTATE '42S01' SET MYSQL_ERRNO = 1050, MESSAGE_TEXT = msg;\n" +
			"  END IF;\nEND",
		"CALL " + proc + "()",
		"DROP PROCEDURE IF EXISTS " + proc,
	}
}
