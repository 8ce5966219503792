package mysql

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The absence recorder (dialect.AbsenceRecorder; docs/design.md G10, "A claim of an
// absent key", red-team rt42e F1): one stored procedure per table with tombstones,
// installed with the tombstone triggers (TombstoneDDL) and dropped with them,
//
//	fencedsql_tombclaim_<table>(fencedsql_k1 <LONGTEXT|LONGBLOB>, …, fencedsql_tok BIGINT)
//	    MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT 'fencedsql absence recorder v2'
//
// which records "the key's absence claimed at the token" in the table's tombstone
// table: the key with the token, keeping the greater token (and the later date) of a
// tombstone already there, dated by the server's clock (tombClock) as a DELETE's
// tombstone and purged with them. The wrapper CALLs it after a token-bound claim that
// pins the table's whole primary key and whose fencing UPDATE stamped no row; the
// tombstone guard's INSERT check then refuses that key under an older token and lets
// the claimer's equal token and newer ones through.
//
// A key whose tombstone already holds a newer token than the claim's (the key deleted,
// or claimed absent, under it) is the newer holder's: version 2 (red-team rt44e F2)
// refuses the claim as the tombstone guard refuses the key's INSERT, with the token
// column's NOT NULL error (SIGNAL SQLSTATE '23000', MYSQL_ERRNO 1048, 'Column
// '<token column>' cannot be null'), which the wrapper reports as a *FencedError: the
// duplicate key's update sets fence_token to NULL when the stored token is greater,
// which strict mode refuses with 1048 (the statement records nothing), and the block's
// handler re-signals it naming the table's token column. The duplicate-key path reads
// the latest committed tombstone and locks it (a concurrent claim or DELETE of the key
// is waited for and judged committed). The claimer's own token (equal) passes. The
// procedure checks that it runs in a strict sql_mode (its own, fixed when it was
// created) and refuses otherwise (the guard's error, SQLSTATE GuardSQLState): in a
// non-strict mode that NULL would be stored as 0.
//
// What the procedure cannot be made to do: lower anything. It reads no session or
// user variable (the guard's marks, mark.go, are not its business); it runs with the
// sql_mode it was created with, not the caller's; its only write is that one INSERT …
// ON DUPLICATE KEY UPDATE, which keeps a newer token or fails, and a NULL key part or
// token (GREATEST with a NULL is NULL, which a non-strict mode would store as 0)
// records nothing. Whoever
// may EXECUTE it can therefore only raise a key's tombstone to a token of their
// choosing: a denial of that key's INSERT to older tokens until the purge, never a
// stale write let through.
//
// The key's values arrive as text (LONGTEXT in utf8mb4) or, for a binary key column,
// as bytes (LONGBLOB) and are converted to the key's types by the INSERT into the
// tombstone table, which has them (and tombstoneKey keeps them so when a key column's
// type changes): no parameter type to go stale. A value the key column cannot hold
// (too long for it, out of its range: errors 1406 and 1264 in the strict mode the
// installer must use) records nothing, as no row of it can exist; any other
// conversion error fails the CALL, and with it the claim. A server clock that reads
// NULL refuses, as the tombstone triggers do.
//
// Rights: SQL SECURITY DEFINER, the application may not write the tombstone table.
// Installed by the application's own account, MariaDB grants that account EXECUTE on
// it (automatic_sp_privileges); installed with a separate owner (fencedsql-schema
// -owner: CREATE DEFINER = owner PROCEDURE, OwnedDDL) the application account needs
// GRANT EXECUTE ON PROCEDURE, which PrivilegeProblems proposes. Without it the CALL
// fails with the server's error 1370 (execute command denied) and the claim with it:
// a denial, never a claim of an absent key that silently claimed nothing (MariaDB
// lists the procedure in information_schema.ROUTINES to an account with a right on
// the database, so AbsenceRecorderQuery still says yes).
const (
	// absenceMarker is the recorder's COMMENT, which AbsenceRecorderQuery and
	// TombstoneInstalledQuery look for: an older version is not installed, and the
	// Fix re-creates it.
	absenceMarker = "fencedsql absence recorder v2"
	// absenceVersion is absenceMarker's number.
	absenceVersion = 2
	// absenceTokenParam is the recorder's token parameter.
	absenceTokenParam = "fencedsql_tok"
)

// absenceProc is the recorder's name for the table named name.
func absenceProc(name string) string { return tombName("claim", name) }

func absenceProcName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: absenceProc(table.Name)}
}

// binaryKeyType reports whether a key column of COLUMN_TYPE typ holds bytes (its
// value reaches the recorder as LONGBLOB, not as utf8mb4 text).
func binaryKeyType(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(typ))
	for _, p := range []string{"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"} {
		if t == p || strings.HasPrefix(t, p+"(") || strings.HasPrefix(t, p+" ") {
			return true
		}
	}
	return false
}

// absenceDDL returns the statements that (re)create table's recorder for the key.
func (d dialectImpl) absenceDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	fn := absenceProcName(table).Quote(d.QuoteIdent)
	params := make([]string, len(key))
	for i, k := range key {
		typ := "LONGTEXT CHARACTER SET utf8mb4"
		if binaryKeyType(k.Type) {
			typ = "LONGBLOB"
		}
		params[i] = "fencedsql_k" + strconv.Itoa(i+1) + " " + typ
	}
	return []string{
		"DROP PROCEDURE IF EXISTS " + fn,
		"CREATE PROCEDURE " + fn + "(" + strings.Join(params, ", ") + ", " + absenceTokenParam + " BIGINT) MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT " + literal(absenceMarker) + "\n" +
			absenceBody(tombTable(table).Quote(d.QuoteIdent), d.keyList(key), len(key), table.Name, tokenCol),
	}
}

// absenceBody is the recorder's body (its ROUTINE_DEFINITION) for the tombstone table
// tomb (quoted, qualified as the triggers name it) and its key column list (quoted,
// separated by ", "), n columns, of the table named name, whose token column is
// tokenCol.
func absenceBody(tomb, list string, n int, name, tokenCol string) string {
	return absenceBodyOf(absenceVersion, tomb, list, n, name, tokenCol)
}

// absenceBodyOf is absenceBody as version v wrote it: v2 (this one) or v1, the
// previous one, without the strict-mode check and the fence (red-team rt44e F2), which
// ownAbsence still recognises as the guard's own until the Fix re-creates it (v1 does
// not use tokenCol).
func absenceBodyOf(v int, tomb, list string, n int, name, tokenCol string) string {
	vals := make([]string, n)
	notNull := make([]string, n)
	for i := range vals {
		vals[i] = "fencedsql_k" + strconv.Itoa(i+1)
		notNull[i] = vals[i] + " IS NOT NULL"
	}
	insert := "INSERT INTO " + tomb + " (" + list + ", fence_token, deleted_at) VALUES (" + strings.Join(vals, ", ") + ", " + absenceTokenParam + ", " + tombClock + ")\n"
	if v < 2 {
		return "BEGIN\n" +
			"  DECLARE EXIT HANDLER FOR 1264, 1406 BEGIN END;\n" +
			"  IF " + tombClock + " IS NULL THEN\n" +
			"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(name, "no server clock to date the tombstone (CONVERT_TZ gave NULL)") + ";\n" +
			"  END IF;\n" +
			"  IF " + strings.Join(notNull, " AND ") + " AND " + absenceTokenParam + " IS NOT NULL THEN\n" +
			"    " + insert +
			"      ON DUPLICATE KEY UPDATE fence_token = GREATEST(fence_token, VALUES(fence_token)), deleted_at = GREATEST(deleted_at, VALUES(deleted_at));\n" +
			"  END IF;\n" +
			"END"
	}
	return "BEGIN\n" +
		"  DECLARE EXIT HANDLER FOR 1264, 1406 BEGIN END;\n" +
		"  IF " + tombClock + " IS NULL THEN\n" +
		"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(name, "no server clock to date the tombstone (CONVERT_TZ gave NULL)") + ";\n" +
		"  END IF;\n" +
		"  IF FIND_IN_SET('STRICT_TRANS_TABLES', @@SESSION.sql_mode) = 0 AND FIND_IN_SET('STRICT_ALL_TABLES', @@SESSION.sql_mode) = 0 THEN\n" +
		"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(name, "absence recorder created in a non-strict sql_mode: re-create it") + ";\n" +
		"  END IF;\n" +
		"  IF " + strings.Join(notNull, " AND ") + " AND " + absenceTokenParam + " IS NOT NULL THEN\n" +
		"    BEGIN\n" +
		"      DECLARE EXIT HANDLER FOR 1048 SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = " + literal("Column '"+tokenCol+"' cannot be null") + ";\n" +
		"      " + insert +
		"        ON DUPLICATE KEY UPDATE fence_token = IF(fence_token > VALUES(fence_token), NULL, VALUES(fence_token)), deleted_at = GREATEST(deleted_at, VALUES(deleted_at));\n" +
		"    END;\n" +
		"  END IF;\n" +
		"END"
}

// ownAbsence reports whether def, the ROUTINE_DEFINITION of a procedure named like
// table's recorder, is exactly the body absenceDDL writes for table's tombstone table
// and some list of quoted key columns and token column, of this version or the
// previous one (v1, which a database upgraded to this library keeps until the Fix
// re-creates it: TombstoneInstalledQuery reports it): it can only raise tombstones of
// that table (the guard-writer check leaves it alone; any other text is judged as a
// user's routine).
func (d dialectImpl) ownAbsence(def string, table dialect.TableName) bool {
	tomb := tombTable(table).Quote(d.QuoteIdent)
	head := "INSERT INTO " + tomb + " ("
	i := strings.Index(def, head)
	if i < 0 {
		return false
	}
	rest := def[i+len(head):]
	j := strings.Index(rest, ", fence_token, deleted_at) VALUES (")
	if j < 0 {
		return false
	}
	list := rest[:j]
	n := strings.Count(list, "`, `") + 1
	tokenCol := ""
	const colHead, colTail = "MESSAGE_TEXT = 'Column ''", "'' cannot be null';\n"
	if a := strings.Index(def, colHead); a >= 0 {
		if b := strings.Index(def[a+len(colHead):], colTail); b >= 0 {
			tokenCol = unliteral(def[a+len(colHead) : a+len(colHead)+b])
		}
	}
	for v := absenceVersion; v >= 1; v-- {
		if def == absenceBodyOf(v, tomb, list, n, table.Name, tokenCol) {
			return true
		}
	}
	return false
}

// unliteral undoes literal's escapes inside a quoted text.
func unliteral(s string) string {
	return strings.NewReplacer(`\\`, `\`, `''`, `'`).Replace(s)
}

// dropAbsence drops table's recorder.
func (d dialectImpl) dropAbsence(table dialect.TableName) string {
	return "DROP PROCEDURE IF EXISTS " + absenceProcName(table).Quote(d.QuoteIdent)
}

// absenceInstalled is the SQL condition that table's recorder of this version is
// there (its COMMENT), SQL SECURITY DEFINER, a procedure: its arguments are the
// schema ("" for the connection's database) and the name.
const absenceInstalled = "EXISTS (SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND ROUTINE_NAME = ? " +
	"AND ROUTINE_TYPE = 'PROCEDURE' AND SECURITY_TYPE = 'DEFINER' AND ROUTINE_COMMENT = '" + absenceMarker + "')"

// AbsenceRecorderQuery yields 1 when table's recorder of this version is listed in
// information_schema.ROUTINES (MariaDB lists it to an account with a right on the
// database, EXECUTE or not: one without EXECUTE then gets the claim failed by the
// CALL's permission error, not skipped).
func (dialectImpl) AbsenceRecorderQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT IF(" + absenceInstalled + ", 1, 0)", []any{table.Schema, absenceProc(table.Name)}
}

// AbsenceRecordSQL CALLs table's recorder with the key's values and the token.
func (d dialectImpl) AbsenceRecordSQL(table dialect.TableName, keyColumns int) string {
	ps := make([]string, keyColumns+1)
	for i := range ps {
		ps[i] = "?"
	}
	return "CALL " + absenceProcName(table).Quote(d.QuoteIdent) + "(" + strings.Join(ps, ", ") + ")"
}

var _ dialect.AbsenceRecorder = dialectImpl{}
