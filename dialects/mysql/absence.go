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
	absenceMarker = "fencedsql absence recorder v3"
	// absenceVersion is absenceMarker's number.
	absenceVersion = 3
	// absenceTokenParam is the recorder's token parameter.
	absenceTokenParam = "fencedsql_tok"
	// ClaimConflictSQLState is the SQLSTATE of the recorder's claim conflict (version
	// 3, red-team rt45a F1): a row of the claimed key written under an older token
	// after the claim read the key as absent (dialect.ErrorClaimConflict).
	ClaimConflictSQLState = "FNCD4"
)

// absenceMarkerOf is the COMMENT of the recorder of version v (absenceMarker for
// this one).
func absenceMarkerOf(v int) string { return "fencedsql absence recorder v" + strconv.Itoa(v) }

// markerVersion is the version whose COMMENT is comment (absenceMarkerOf), 0 for none.
func markerVersion(comment string) int {
	for v := absenceVersion; v >= 1; v-- {
		if comment == absenceMarkerOf(v) {
			return v
		}
	}
	return 0
}

// absenceProc is the recorder's name for the table named name.
func absenceProc(name string) string { return tombName("claim", name) }

func absenceProcName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: absenceProc(table.Name)}
}

// binaryKeyType reports whether a key column of COLUMN_TYPE typ holds bytes (its
// value reaches the recorder as LONGBLOB, not as text).
func binaryKeyType(typ string) bool {
	t := strings.ToLower(strings.TrimSpace(typ))
	for _, p := range []string{"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"} {
		if t == p || strings.HasPrefix(t, p+"(") || strings.HasPrefix(t, p+" ") {
			return true
		}
	}
	return false
}

// absenceParam is the recorder's parameter for key column k, as version v declares
// it: bytes for a binary column; since version 3 text in k's own collation for a
// string column (the key's lookup compares the column with it: another collation is
// an illegal mix, red-team rt45a F1); text in utf8mb4 otherwise.
func absenceParam(v int, k dialect.KeyColumn) (typ, charset, collation string) {
	switch {
	case binaryKeyType(k.Type):
		return "longblob", "", ""
	case v >= 3 && k.Collation != "":
		return "longtext", collationCharset(k.Collation), k.Collation
	}
	return "longtext", "utf8mb4", ""
}

// collationCharset is the character set of the collation named c: its name up to the
// first "_" ("binary" is its own).
func collationCharset(c string) string {
	if i := strings.IndexByte(c, '_'); i > 0 {
		return c[:i]
	}
	return c
}

// lengthFaithful reports whether under collation c (a key column's, "" for none) a
// string equal to one the column can hold is never longer than it, so that a claimed
// value too long for the column matches no row (red-team rt45a F2): binary
// comparison (binary, *_bin) and the collations that weigh each character alone
// (*_general_ci and its nopad and mysql500 variants, *_swedish_ci). The UCA
// collations (utf8mb4_unicode_ci, _520_ci, uca1400) ignore characters (U+200B) and
// combine others (U+0301), and the language ones expand characters ("ß" = "ss"): a
// longer value may equal a stored key.
func lengthFaithful(c string) bool {
	c = strings.ToLower(c)
	if c == "" || c == "binary" || strings.HasSuffix(c, "_bin") {
		return true
	}
	for _, s := range []string{"_general_ci", "_general_nopad_ci", "_general_mysql500_ci", "_swedish_ci", "_swedish_nopad_ci"} {
		if strings.HasSuffix(c, s) {
			return true
		}
	}
	return false
}

// absenceDDL returns the statements that (re)create table's recorder for the key.
func (d dialectImpl) absenceDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	fn := absenceProcName(table).Quote(d.QuoteIdent)
	return []string{
		"DROP PROCEDURE IF EXISTS " + fn,
		"CREATE PROCEDURE " + fn + "(" + absenceParams(absenceVersion, key) + ") MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT " + literal(absenceMarker) + "\n" +
			d.absenceBody(absenceVersion, table, key, tokenCol),
	}
}

// absenceParams is the recorder's parameter list for the key, as version v declares it.
func absenceParams(v int, key []dialect.KeyColumn) string {
	params := make([]string, len(key))
	for i, k := range key {
		typ, cs, coll := absenceParam(v, k)
		p := "fencedsql_k" + strconv.Itoa(i+1) + " " + strings.ToUpper(typ)
		if cs != "" {
			p += " CHARACTER SET " + cs
		}
		if coll != "" {
			p += " COLLATE " + coll
		}
		params[i] = p
	}
	return strings.Join(params, ", ") + ", " + absenceTokenParam + " BIGINT"
}

// absenceBody is the recorder's body (its ROUTINE_DEFINITION), as version v writes
// it, for table (its tombstone table qualified as the triggers name it) and its
// primary key, whose token column is tokenCol.
func (d dialectImpl) absenceBody(v int, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) string {
	cols := make([]string, len(key))
	faithful := true
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
		if !binaryKeyType(k.Type) && !lengthFaithful(k.Collation) {
			faithful = false
		}
	}
	return absenceBodyOf(v, absenceShape{
		tomb: tombTable(table).Quote(d.QuoteIdent), tbl: table.Quote(d.QuoteIdent), tok: d.QuoteIdent(tokenCol),
		cols: cols, name: table.Name, tokenCol: tokenCol, faithful: faithful,
	})
}

// absenceShape is what a recorder's body is written from: the tombstone table and the
// table (quoted, qualified alike), the token column (quoted and as named), the key's
// columns (quoted, in key order), the table's name, and whether every key column's
// comparison is length-faithful (lengthFaithful).
type absenceShape struct {
	tomb, tbl, tok string
	cols           []string
	name, tokenCol string
	faithful       bool
}

// absenceBodyOf is the recorder's body as version v wrote it: v3 (this one), v2 (the
// fence of a stale claim, red-team rt44e F2, without v3's lookup and collation rule)
// or v1 (neither, nor the strict-mode check), which ownAbsence still recognises as the
// guard's own until the Fix re-creates it (v1 does not use the token column, v1 and v2
// neither the table nor the collations).
func absenceBodyOf(v int, s absenceShape) string {
	n, list := len(s.cols), strings.Join(s.cols, ", ")
	vals := make([]string, n)
	notNull := make([]string, n)
	match := make([]string, n)
	for i := range vals {
		vals[i] = "fencedsql_k" + strconv.Itoa(i+1)
		notNull[i] = vals[i] + " IS NOT NULL"
		match[i] = "x." + s.cols[i] + " = " + vals[i]
	}
	insert := "INSERT INTO " + s.tomb + " (" + list + ", fence_token, deleted_at) VALUES (" + strings.Join(vals, ", ") + ", " + absenceTokenParam + ", " + tombClock + ")\n"
	if v < 2 {
		return "BEGIN\n" +
			"  DECLARE EXIT HANDLER FOR 1264, 1406 BEGIN END;\n" +
			"  IF " + tombClock + " IS NULL THEN\n" +
			"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(s.name, "no server clock to date the tombstone (CONVERT_TZ gave NULL)") + ";\n" +
			"  END IF;\n" +
			"  IF " + strings.Join(notNull, " AND ") + " AND " + absenceTokenParam + " IS NOT NULL THEN\n" +
			"    " + insert +
			"      ON DUPLICATE KEY UPDATE fence_token = GREATEST(fence_token, VALUES(fence_token)), deleted_at = GREATEST(deleted_at, VALUES(deleted_at));\n" +
			"  END IF;\n" +
			"END"
	}
	handlers := "  DECLARE EXIT HANDLER FOR 1264, 1406 BEGIN END;\n"
	lookup := ""
	if v >= 3 {
		handlers = "  DECLARE EXIT HANDLER FOR 1264 BEGIN END;\n"
		if s.faithful {
			handlers += "  DECLARE EXIT HANDLER FOR 1406 BEGIN END;\n"
		} else {
			handlers += "  DECLARE EXIT HANDLER FOR 1406 SIGNAL SQLSTATE '0A000' SET MESSAGE_TEXT = " +
				messageWith(dialect.AbsenceUnsupportedMark+" on ", s.name, "claimed key too long for its column, may equal a key under its collation") + ";\n"
		}
		lookup = "      IF EXISTS (SELECT 1 FROM " + s.tbl + " x WHERE " + strings.Join(match, " AND ") + " AND (x." + s.tok + " IS NULL OR x." + s.tok + " < " + absenceTokenParam + ") FOR UPDATE) THEN\n" +
			"        SIGNAL SQLSTATE '" + ClaimConflictSQLState + "' SET MESSAGE_TEXT = " + messageWith(dialect.ClaimConflictMark+" on ", s.name, "key written under an older token after the claim read it as absent; retry") + ";\n" +
			"      END IF;\n"
	}
	return "BEGIN\n" +
		handlers +
		"  IF " + tombClock + " IS NULL THEN\n" +
		"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(s.name, "no server clock to date the tombstone (CONVERT_TZ gave NULL)") + ";\n" +
		"  END IF;\n" +
		"  IF FIND_IN_SET('STRICT_TRANS_TABLES', @@SESSION.sql_mode) = 0 AND FIND_IN_SET('STRICT_ALL_TABLES', @@SESSION.sql_mode) = 0 THEN\n" +
		"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(s.name, "absence recorder created in a non-strict sql_mode: re-create it") + ";\n" +
		"  END IF;\n" +
		"  IF " + strings.Join(notNull, " AND ") + " AND " + absenceTokenParam + " IS NOT NULL THEN\n" +
		"    BEGIN\n" +
		"      DECLARE EXIT HANDLER FOR 1048 SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = " + literal("Column '"+s.tokenCol+"' cannot be null") + ";\n" +
		"      " + insert +
		"        ON DUPLICATE KEY UPDATE fence_token = IF(fence_token > VALUES(fence_token), NULL, VALUES(fence_token)), deleted_at = GREATEST(deleted_at, VALUES(deleted_at));\n" +
		"    END;\n" +
		lookup +
		"  END IF;\n" +
		"END"
}

// ownAbsence returns the version (0: none) of the recorder whose ROUTINE_DEFINITION
// is def, of a procedure named like table's recorder, when def is exactly the body
// absenceDDL writes, of that version, for table's tombstone table and its primary key
// key as the catalog lists it (names and order: never a list read out of def, red-team
// rt45a F3) and token column tokenCol. The caller checks the parameters against the
// same version's (absenceParamsMatch): the body alone does not say what the CALL's
// values become.
func (d dialectImpl) ownAbsence(def string, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) int {
	if len(key) == 0 {
		return 0
	}
	for v := absenceVersion; v >= 1; v-- {
		if def == d.absenceBody(v, table, key, tokenCol) {
			return v
		}
	}
	return 0
}

// absenceParamsMatch reports whether the recorder's parameters, rows of
// information_schema.PARAMETERS in order (name, mode, DTD_IDENTIFIER, character set,
// collation), are exactly those version v declares for the key: the key's values in
// key order, each of its type (a DOUBLE would round a BIGINT key to another, swapped
// parameters record the token as the key: red-team rt45a F3), then the token.
func absenceParamsMatch(v int, key []dialect.KeyColumn, rows [][]string) bool {
	if len(rows) != len(key)+1 {
		return false
	}
	for i, r := range rows {
		if len(r) < 5 || !strings.EqualFold(r[1], "IN") {
			return false
		}
		if i == len(key) {
			dtd := strings.ToLower(r[2])
			return r[0] == absenceTokenParam && (dtd == "bigint" || dtd == "bigint(20)")
		}
		typ, cs, coll := absenceParam(v, key[i])
		if r[0] != "fencedsql_k"+strconv.Itoa(i+1) || !strings.EqualFold(r[2], typ) || !strings.EqualFold(r[3], cs) || (coll != "" && !strings.EqualFold(r[4], coll)) {
			return false
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
// schema ("" for the connection's database) and the name; schema is the same
// schema, named byte for byte (exactDatabase).
func absenceInstalled(schema string) string {
	return "EXISTS (SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("ROUTINE_SCHEMA", schema) + " AND ROUTINE_NAME = ? " +
		"AND ROUTINE_TYPE = 'PROCEDURE' AND SECURITY_TYPE = 'DEFINER' AND ROUTINE_COMMENT = '" + absenceMarker + "')"
}

// AbsenceRecorderQuery yields, for table's claims (dialect.AbsenceRecorder): 1 when
// table's recorder of this version is listed in information_schema.ROUTINES (MariaDB
// lists it to an account with a right on the database, EXECUTE or not: one without
// EXECUTE then gets the claim failed by the CALL's permission error, not skipped); 2
// when it is not but the tombstone guard is there — a trigger of a tombstone name on
// table (its own, or one a rename kept), its tombstone table, or a procedure of the
// recorder's name (an older version's, SQL SECURITY INVOKER; a function of the name is
// no recorder: CALL never reaches it, red-team rt58a F4) — and the wrapper refuses
// the claim with ErrUnsupported instead of claiming nothing (the MySQL/MariaDB side of
// red-team rt45b F7: a recorder dropped, never installed or renamed away let the claim
// answer "absent" having recorded nothing, and a stale holder's INSERT of the key land
// after it); 0 otherwise (no tombstone guard: nothing to record). Whether the listed
// recorder's text is the installer's is the side-door check's (ownRecorder), which the
// lazy check runs before the pool's first statement on table. An application account
// that sees none of these (MySQL lists triggers only to an account with the TRIGGER
// privilege, tables to one with a right on them) while the recorder is missing gets 0:
// schema.Check, run by the migration account, reports the missing recorder.
func (dialectImpl) AbsenceRecorderQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT CASE WHEN " + absenceInstalled(table.Schema) + " THEN 1 WHEN EXISTS (SELECT 1 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("TRIGGER_SCHEMA", table.Schema) + " AND EVENT_OBJECT_TABLE = ? AND " +
			tombTriggerNameLike("TRIGGER_NAME") + ") OR EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ?) " +
			"OR EXISTS (SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("ROUTINE_SCHEMA", table.Schema) + " AND ROUTINE_NAME = ? AND ROUTINE_TYPE = 'PROCEDURE') THEN 2 ELSE 0 END",
		[]any{table.Schema, absenceProc(table.Name), table.Schema, table.Name, table.Schema, tombTable(table).Name, table.Schema, absenceProc(table.Name)}
}

// AbsenceRecordSQL CALLs table's recorder with the key's values and the token.
func (d dialectImpl) AbsenceRecordSQL(table dialect.TableName, keyColumns int) string {
	ps := make([]string, keyColumns+1)
	for i := range ps {
		ps[i] = "?"
	}
	return "CALL " + absenceProcName(table).Quote(d.QuoteIdent) + "(" + strings.Join(ps, ", ") + ")"
}

// KeyProbeLock implements dialect.AbsenceRecorder: LOCK IN SHARE MODE, a current read
// (InnoDB's latest committed row, not the REPEATABLE READ snapshot: red-team rt47b F3)
// that MariaDB and MySQL 8 both take; it shares the record (or gap) lock the claim's
// fencing UPDATE already took under REPEATABLE READ. A claim with NOWAIT is refused on
// MySQL/MariaDB before anything runs, so nowait is never true here.
func (dialectImpl) KeyProbeLock(bool) string { return " LOCK IN SHARE MODE" }

var _ dialect.AbsenceRecorder = dialectImpl{}
