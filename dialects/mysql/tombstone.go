package mysql

import (
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/internal/sqltext"
)

// Tombstones (dialect.Tombstoner, G9 in docs/design.md: no resurrection of a deleted
// row under an older token).
//
// TombstoneDDL creates, when it is missing, the table's own tombstone table in its
// database, keyed by the table's primary key with the same column types, character
// sets and collations, so that a tombstone matches exactly the keys the table's own
// primary key calls equal (a case-insensitive collation, a TIMESTAMP written under
// another time_zone: no text rendering is involved):
//
//	CREATE TABLE IF NOT EXISTS fencedsql_tomb_<table> (
//	    <pk columns, same COLUMN_TYPE and COLLATE> NOT NULL,
//	    fence_token BIGINT NOT NULL, deleted_at DATETIME(6) NOT NULL,
//	    PRIMARY KEY (<pk columns>)) ENGINE=InnoDB
//
// four triggers per table, with the key and token columns compiled in (and the
// absence recorder, a stored procedure fencedsql_tombclaim_<table>: absence.go):
//
//	fencedsql_tombrep_<table>  BEFORE INSERT marks NEW.<token> for the rows a REPLACE
//	                                         deletes to make room for NEW
//	                                         (replacemark.go)
//	fencedsql_tombdel_<table>  AFTER DELETE  records OLD's key and OLD.<token> (or the
//	                                         token a one-statement DELETE marked, or
//	                                         the token of the REPLACE that displaces
//	                                         the row, if greater), keeping the greater
//	                                         token, dated by the server's clock
//	                                         (tombClock)
//	fencedsql_tombins_<table>  AFTER INSERT  refuses NEW when the tombstone of its key
//	                                         holds a greater token than NEW.<token>, or
//	                                         when NEW's REPLACE mark was lost
//	fencedsql_tombkey_<table>  AFTER UPDATE  when the key changed: records the key the
//	                                         row left, checks the key it moved onto
//
// The checks run AFTER the row is in, that is after InnoDB waited on the duplicate key
// for a concurrent DELETE of the same key to end, and read the tombstone with a
// locking read (LOCK IN SHARE MODE), which sees the latest committed tombstone in every
// isolation level. The refusal is the error strict mode raises for a NULL in the token
// column, SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column
// ”fence_token” cannot be null', which the wrapper reports as fencedsql.ErrFenced
// (the guard uses the same SIGNAL). An AFTER INSERT trigger's error undoes the
// statement (InnoDB), INSERT … ON DUPLICATE KEY UPDATE included: its update path is
// fenced by the row's token.
//
// Triggers run with their definer's rights: installed by a role the application does
// not log in as (fencedsql-schema -owner), the application needs no right on the
// tombstone table. Limits: foreign-key cascades run no triggers in MySQL and record no
// tombstones; a TEMPORARY table named like the tombstone table shadows it for the
// session that created it (the wrapper refuses creating one; grant applications
// CREATE TEMPORARY TABLES only where needed). DDL is not transactional: each trigger
// is installed through a shadow copy (replaceTrigger), so that re-installing leaves no
// moment without it.
func tombName(kind, name string) string {
	return boundedTrigger("fencedsql_tomb"+kind+"_", name)
}

func tombObject(kind string, table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: tombName(kind, table.Name)}
}

// tombTable is table's tombstone table: fencedsql_tomb_<table> (TombstoneTablePrefix).
func tombTable(table dialect.TableName) dialect.TableName { return tombObject("", table) }

// PrimaryKeyQuery lists the primary key columns of table in key order: name,
// COLUMN_TYPE, collation ("" for none) and the table's database. The key's columns are
// joined to their definitions by name byte for byte (sameName: not to a case or accent
// twin's, red-team rt56a F2).
func (dialectImpl) PrimaryKeyQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT k.COLUMN_NAME, c.COLUMN_TYPE, COALESCE(c.COLLATION_NAME, ''), k.TABLE_SCHEMA FROM information_schema.KEY_COLUMN_USAGE k " +
			"JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND c.TABLE_NAME = ? AND " +
			sameName("c.TABLE_SCHEMA", "k.TABLE_SCHEMA") + " AND " + sameName("c.TABLE_NAME", "k.TABLE_NAME") + " AND " + sameName("c.COLUMN_NAME", "k.COLUMN_NAME") + " " +
			"WHERE k.TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND k.TABLE_NAME = ? AND k.CONSTRAINT_NAME = 'PRIMARY' ORDER BY k.ORDINAL_POSITION",
		[]any{table.Schema, table.Name, table.Schema, table.Name}
}

// keyColumnDef is the definition of a tombstone key column: the key column's type and
// collation, NOT NULL, and for a TIMESTAMP an explicit default (without one, the first
// TIMESTAMP column of a table may get ON UPDATE CURRENT_TIMESTAMP, which would change
// the key when a tombstone is updated).
func keyColumnDef(k dialect.KeyColumn, quote func(string) string) string {
	def := quote(k.Name) + " " + k.Type
	if k.Collation != "" {
		def += " COLLATE " + k.Collation
	}
	def += " NOT NULL"
	if t := strings.ToLower(k.Type); strings.HasPrefix(t, "timestamp") {
		def += " DEFAULT CURRENT_TIMESTAMP" + strings.TrimPrefix(t, "timestamp")
	}
	return def
}

// tombClock dates a tombstone, and PurgeTombstonesQuery compares with it: the server's
// clock in UTC. SYSDATE(6) is the time the server reads when the expression is
// evaluated, which SET timestamp does not move (UTC_TIMESTAMP(6) and NOW(6) are the
// statement's start as @@timestamp says, which any session, and any stored function or
// trigger it runs, may set: a tombstone dated by it in 2001 was purged at once and a
// stale holder re-created the key, red-team passes rt10t and rt10f). SYSDATE is in the
// session's time zone; CONVERT_TZ from @@session.time_zone (SYSTEM, an offset or a
// named zone) gives UTC. It is NULL only for a zone CONVERT_TZ cannot read (a named
// zone whose time-zone tables were emptied since the session set it): the tombstone
// triggers then refuse the statement (noClock) rather than store a NULL or a zero date,
// and the purge removes nothing. In the hour a SYSTEM or named zone repeats when its
// daylight saving time ends, the local time is ambiguous and the tombstone may be dated
// an hour early: keep the retention above an hour (it is days in practice). A server
// started with --sysdate-is-now makes SYSDATE an alias of NOW, and the session clock
// dates tombstones again (docs/design.md, "Known limits").
const tombClock = "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00')"

// tombClockPattern matches, in information_schema.TRIGGERS.ACTION_STATEMENT, a tombstone
// trigger that dates by tombClock (the trigger version after the session-clock fix).
// LIKE's "_" and "." match themselves too.
const tombClockPattern = "%" + tombClock + "%"

// TombstoneDDL returns the statements that create the tombstone table (if missing),
// install table's tombstone triggers and (re)create its absence recorder (absence.go),
// one statement each for database/sql; each trigger replaces one of its name without
// a moment in which the table has neither (replaceTrigger). The recorder is dropped
// and created: a claim of an absent key in between fails its CALL (a denial). A long
// table name's hashed derived objects held by another table are refused first
// (ownedCheck); the tombstone table is marked as the table's (its COMMENT).
func (d dialectImpl) TombstoneDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	defs := make([]string, len(key))
	for i, k := range key {
		defs[i] = keyColumnDef(k, d.QuoteIdent)
	}
	create := "CREATE TABLE IF NOT EXISTS " + tombTable(table).Quote(d.QuoteIdent) + " (" + strings.Join(defs, ", ") +
		", fence_token BIGINT NOT NULL, deleted_at DATETIME(6) NOT NULL, PRIMARY KEY (" + d.keyList(key) + ")) ENGINE=InnoDB COMMENT = " + literal(ownedMarkText(table.Name))
	ddl := d.ownedCheck(table, ownedObjects{triggers: tombTriggerNames(table), tomb: true})
	ddl = append(append(ddl, create), d.replaceTriggers(d.tombTriggerDefs(markVersion, table, key, tokenCol))...)
	return append(ddl, d.absenceDDL(table, key, tokenCol)...)
}

// tombTriggerNames are the names of table's tombstone triggers (tombKinds).
func tombTriggerNames(table dialect.TableName) []string {
	names := make([]string, len(tombKinds))
	for i, k := range tombKinds {
		names[i] = tombName(k, table.Name)
	}
	return names
}

// keyList is the key's columns, quoted, separated by commas.
func (d dialectImpl) keyList(key []dialect.KeyColumn) string {
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
	}
	return strings.Join(cols, ", ")
}

// tombTriggerDefs are table's four tombstone triggers (see above), the REPLACE mark's
// first: the AFTER INSERT trigger refuses a row whose mark is missing, so on a table
// whose guard is upgraded the mark is set before that check is installed. v is the
// REPLACE mark's version (markVersion: this one; markVersion-1 for the previous
// version's text, which guardTriggers and stockTrigger still recognise).
//
// Upgrading from mark version 1 (each trigger replaced through its shadow, the REPLACE
// mark's first) leaves no moment in which a stale write or a resurrection passes: the
// variable keeps its name, so while the REPLACE mark is of one version and the DELETE
// trigger of the other, the DELETE trigger reads no mark of its statement in it (no text
// of one version equals one of the other, in any database: mark.go), clears
// it, and the AFTER INSERT trigger (the same text in both versions) refuses the row a
// REPLACE wrote after displacing another: that REPLACE fails (GuardSQLState), a plain
// INSERT, an upsert and a DELETE are judged as before.
func (d dialectImpl) tombTriggerDefs(v int, table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []triggerDef {
	tbl := table.Quote(d.QuoteIdent)
	tomb := tombTable(table).Quote(d.QuoteIdent)
	tok := d.QuoteIdent(tokenCol)
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
	}
	list := d.keyList(key)
	noClock := "SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(table.Name, "no server clock to date the tombstone (CONVERT_TZ gave NULL)")
	each := func(sep string, f func(c string) string) string { return sqltext.Each(cols, sep, f) }
	record := func(token string) string {
		return "INSERT INTO " + tomb + " (" + list + ", fence_token, deleted_at) VALUES (" + each(", ", func(c string) string { return "OLD." + c }) +
			", " + token + ", " + tombClock + ") ON DUPLICATE KEY UPDATE fence_token = GREATEST(fence_token, VALUES(fence_token)), deleted_at = VALUES(deleted_at)"
	}
	// One IF statement each (no BEGIN/DECLARE: the cheapest trigger body); the EXISTS
	// subquery is a locking read.
	refused := "IF EXISTS (SELECT 1 FROM " + tomb + " t WHERE " + each(" AND ", func(c string) string { return "t." + c + " = NEW." + c }) +
		" AND (NEW." + tok + " IS NULL OR t.fence_token > NEW." + tok + ") LOCK IN SHARE MODE) THEN\n" +
		"    SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = " + literal("Column '"+tokenCol+"' cannot be null") + ";\n"
	check := refused + "  END IF"
	markLost := "  ELSEIF " + replaceMarkLost(table.Name) + " THEN\n" +
		"    SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(table.Name, "a row this write displaced lost its token (a trigger set timestamp)") + ";\n"
	return []triggerDef{
		d.replaceMarkDef(v, table, tokenCol),
		{tombObject("del", table), "AFTER DELETE ON " + tbl + " FOR EACH ROW\n" +
			"IF " + tombClock + " IS NULL THEN\n  " + noClock + ";\nELSE\n  " + record("GREATEST(COALESCE(OLD."+tok+", 0), "+markedToken+", "+replaceMarkedToken(v, table.Name)+")") + ";\nEND IF"},
		{tombObject("ins", table), "AFTER INSERT ON " + tbl + " FOR EACH ROW\n  " + refused + markLost + "  END IF"},
		{tombObject("key", table), "AFTER UPDATE ON " + tbl + " FOR EACH ROW\n" +
			"IF NOT (" + each(" AND ", func(c string) string { return "OLD." + c + " <=> NEW." + c }) + ") THEN\n" +
			"  IF " + tombClock + " IS NULL THEN\n    " + noClock + ";\n  END IF;\n" +
			"  " + record("GREATEST(COALESCE(OLD."+tok+", 0), COALESCE(NEW."+tok+", 0))") + ";\n  " + check + ";\nEND IF"},
	}
}

// UntombstoneDDL drops table's four tombstone triggers (the REPLACE mark's last: the
// AFTER INSERT trigger refuses a row without its mark), its absence recorder, then its
// tombstone table: a
// tombstone table without the triggers is evidence of a guard a table swap lost
// (lostGuard), which the lazy check refuses.
func (d dialectImpl) UntombstoneDDL(table dialect.TableName) []string {
	var ddl []string
	for _, kind := range tombKinds {
		ddl = append(ddl, "DROP TRIGGER IF EXISTS "+tombObject(kind, table).Quote(d.QuoteIdent))
	}
	ddl = append(ddl, d.dropAbsence(table))
	return append(ddl, "DROP TABLE IF EXISTS "+tombTable(table).Quote(d.QuoteIdent))
}

// markPattern matches a DELETE trigger that reads the one-statement DELETE's mark and
// clears one that is not its statement's (clearMark), and dates by the server's clock
// (tombClock); LIKE's "_" matches itself too. DeleteFenceQuery requires it: beside a
// tombstone trigger of an older version, DELETEs run as two statements until the
// triggers are re-installed. (TombstoneInstalledQuery requires the REPLACE mark's
// reading as well: a trigger of the previous version reads the one-statement DELETE's
// mark as this one does.)
var markPattern = "%" + clearMark + tombClockPattern

// TombstoneInstalledQuery yields 1 when the four tombstone triggers of this version
// (the REPLACE mark's trigger sets the table's mark of this mark version, markVersion;
// the DELETE trigger reads the one-statement DELETE's mark and the REPLACE mark of
// this mark version and clears a stale one; the INSERT
// trigger refuses a row whose REPLACE mark was lost; the DELETE and key-change triggers
// date by the server's clock) exist on table, its tombstone table and its absence
// recorder of this version (absence.go; since the recorder, red-team rt42e F1) exist, and no
// tombstone trigger of another name is on table (one a rename kept, recording into the
// old name's tombstone table: TombstoneCarryDDL carries its tombstones over and drops
// it, red-team rt31a F1): triggers of an older version are reported as not installed,
// and schema.Check's fix re-creates them.
func (dialectImpl) TombstoneInstalledQuery(table dialect.TableName) (query string, args []any) {
	rep, del, ins, key := tombName("rep", table.Name), tombName("del", table.Name), tombName("ins", table.Name), tombName("key", table.Name)
	v := replaceMarkVar(table.Name)
	return "SELECT IF(COUNT(*) = 4 AND EXISTS (SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ?) AND " + absenceInstalled(table.Schema) + " AND NOT EXISTS (" +
			"SELECT 1 FROM information_schema.TRIGGERS o WHERE o.TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("o.TRIGGER_SCHEMA", table.Schema) + " AND o.EVENT_OBJECT_TABLE = ? AND o.TRIGGER_NAME NOT IN (?, ?, ?, ?) AND " +
			tombTriggerNameLike("o.TRIGGER_NAME") + "), 1, 0) " +
			"FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("TRIGGER_SCHEMA", table.Schema) + " AND EVENT_OBJECT_TABLE = ? AND " +
			"((TRIGGER_NAME = ? AND ACTION_TIMING = 'BEFORE' AND EVENT_MANIPULATION = 'INSERT' AND ACTION_STATEMENT LIKE ?) OR " +
			"(TRIGGER_NAME = ? AND ACTION_TIMING = 'AFTER' AND EVENT_MANIPULATION = 'DELETE' AND ACTION_STATEMENT LIKE ?) OR " +
			"(TRIGGER_NAME = ? AND ACTION_TIMING = 'AFTER' AND EVENT_MANIPULATION = 'INSERT' AND ACTION_STATEMENT LIKE ?) OR " +
			"(TRIGGER_NAME = ? AND ACTION_TIMING = 'AFTER' AND EVENT_MANIPULATION = 'UPDATE' AND ACTION_STATEMENT LIKE ?))",
		[]any{table.Schema, tombTable(table).Name, table.Schema, absenceProc(table.Name), table.Schema, table.Name, rep, del, ins, key,
			table.Schema, table.Name,
			rep, "%SET " + v + " := %" + markScoped + "%",
			del, "%" + clearMark + "%" + markTokenScoped(markVersion, v) + tombClockPattern,
			ins, "%" + replaceMarkLost(table.Name) + "%",
			key, tombClockPattern}
}

// tombTriggerNameLike is the SQL condition that the trigger name col carries one of the
// tombstone guard's name prefixes (fencedsql_tomb<kind>_, tombKinds).
func tombTriggerNameLike(col string) string {
	var or []string
	for _, k := range tombKinds {
		or = append(or, col+" LIKE 'fencedsql\\_tomb"+k+"\\_%'")
	}
	return "(" + strings.Join(or, " OR ") + ")"
}

// PurgeTombstonesQuery deletes table's tombstones older than olderThan by the server's
// clock in UTC (tombClock, the clock that dated them: a session clock set by hand on
// the purging connection moves neither). Should the clock read NULL, nothing is
// deleted. It runs with sql_safe_updates off (the statement's own setting: MariaDB's
// SET STATEMENT, MySQL's SET_VAR hint, each a comment to the other server): a
// safe-updates session refused it (1175, no key column in the WHERE), blamed on the
// tombstone guard (red-team rt52b F3).
func (d dialectImpl) PurgeTombstonesQuery(table dialect.TableName, olderThan time.Duration) (query string, args []any) {
	return "/*M!100108 SET STATEMENT sql_safe_updates = 0 FOR */ DELETE /*+ SET_VAR(sql_safe_updates = 0) */ FROM " + tombTable(table).Quote(d.QuoteIdent) + " WHERE deleted_at < " + tombClock + " - INTERVAL ? MICROSECOND",
		[]any{olderThan.Microseconds()}
}

var _ dialect.Tombstoner = dialectImpl{}

// UniqueKeysQuery lists the columns of table's unique indexes other than PRIMARY
// (dialect.UniqueKeyFinder); a functional key part reads "(expression)".
func (dialectImpl) UniqueKeysQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT INDEX_NAME, COALESCE(COLUMN_NAME, '(expression)') FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0 AND INDEX_NAME <> 'PRIMARY' ORDER BY INDEX_NAME, SEQ_IN_INDEX",
		[]any{table.Schema, table.Name}
}

var _ dialect.UniqueKeyFinder = dialectImpl{}

// TombstoneTablesQuery lists the tombstone tables of the connection's database
// (dialect.TombstoneLister), system-versioned ones included (guardversioned.go: a
// versioned tombstone table keeps its tombstones, which MaxToken must count).
func (dialectImpl) TombstoneTablesQuery() string {
	return `SELECT '', TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') AND TABLE_NAME LIKE 'fencedsql\_tomb\_%'`
}

var _ dialect.TombstoneLister = dialectImpl{}
