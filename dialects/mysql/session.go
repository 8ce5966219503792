package mysql

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The session check (docs/design.md G11). A fenced write fails through the NOT NULL
// violation of the fencing NULL, and the rewriter lexes statements with MySQL's
// default quoting, so these session settings must be right before a guarded write:
//
//   - sql_mode must be strict (STRICT_TRANS_TABLES or STRICT_ALL_TABLES): otherwise the
//     server stores 0 for the NULL and the stale write succeeds;
//   - sql_mode must not have ANSI_QUOTES ("…" becomes an identifier, without backslash
//     escapes) or NO_BACKSLASH_ESCAPES (a backslash no longer escapes in strings): the
//     server would read statements differently from the lexer. The combination modes
//     that imply ANSI_QUOTES (ANSI, ORACLE, MSSQL, DB2, POSTGRESQL, MAXDB) are refused
//     by name too. Other modes change what an expression means, identically for the
//     statement as written and as fenced, and are accepted (SIMULTANEOUS_ASSIGNMENT
//     included: the wrapper's assignments read only their own column);
//   - character_set_client must be one in which every byte below 0x80 is the ASCII
//     character it looks like: GBK, SJIS, Big5, CP932 and GB18030 have multibyte
//     characters whose second byte can be a backslash (or a backtick), and are refused;
//     so is a character set this package does not know;
//   - sql_log_bin must be ON: with it off the session's writes stay out of the binary
//     log, replicas never get them, and a failover forgets them (a stale token's write
//     is then accepted). It is checked on every server, with or without a binary log:
//     sql_log_bin is 1 by default everywhere, and a server without one today may get
//     replicas tomorrow;
//   - autocommit must be ON: with it off the session is inside a transaction the
//     wrapper does not know of, and an acknowledged autocommit write is never
//     committed (it goes back to the pool uncommitted, and is rolled back when the
//     connection closes);
//   - completion_type must be NO_CHAIN: CHAIN opens a transaction after every COMMIT
//     the wrapper sends (the next autocommit write is then never committed), RELEASE
//     closes the connection after it;
//   - the session's clock must not be set by hand: tombstones are dated by
//     UTC_TIMESTAMP(6), which follows @@SESSION.timestamp, so a clock set back dates a
//     delete's tombstone in the past, the next schema.PurgeTombstones removes it, and a
//     stale token re-creates the deleted row; the one-statement DELETE's mark is dated
//     by it too. A session's timestamp cannot be asked whether it was set, so the check
//     compares NOW(6) (the statement's start, from @@SESSION.timestamp) with SYSDATE(6)
//     (the server's clock at evaluation, which SET timestamp does not move): unset,
//     they differ by the few microseconds between the start of the table-less check
//     query and its evaluation; a difference beyond clockTolerance is refused.
//     Limits: a server started with --sysdate-is-now makes SYSDATE() follow the
//     session's clock, and the check then sees no difference; and a clock set at
//     connect to the then current time (init_connect's SET timestamp =
//     UNIX_TIMESTAMP()) passes if the connection's first guarded write comes within
//     the tolerance, and then lags behind by the connection's age;
//   - on MariaDB (read in a /*M!100002 … */ comment, which MySQL skips: the variables
//     do not exist there and naming one fails the query): skip_replication must be OFF
//     (replicas started with --replicate-events-marked-for-skip may filter the
//     session's writes out), @@SESSION.server_id and @@SESSION.gtid_domain_id must be
//     the server's own (@@GLOBAL) values (a replica ignores events of its own server
//     id, and may filter a replication domain out), and gtid_seq_no must be 0 (a
//     sequence number already used makes replicas skip the session's next
//     transaction); from MariaDB 10.3.4, system_versioning_asof must be DEFAULT (set,
//     every SELECT of a system-versioned table, FOR UPDATE included, reads it as of
//     that time, so a claim would stamp the current rows and return old ones), and
//     @@SESSION.wsrep_on must be the server's own (off on a Galera node, the session's
//     writes are not replicated to the cluster: red-team rt27b).
//
// The wrapper refuses SET of each of these to anything but its safe values on pools
// with guarded tables (fencedsql/internal/plan's protectedSettings); this check
// catches what it cannot see: a server or init_connect default, a DSN parameter
// (go-sql-driver/mysql sends every parameter it does not know as SET name=value at
// connect: timestamp=1000000000, autocommit=0, completion_type=1 …), a statement sent
// on Raw. Of the protected settings it does not read, MySQL's gtid_next cannot be read
// by a query that must also run on MariaDB (no such variable there, and no conditional
// comment runs on MySQL only), and max_join_size and sql_big_selects only make the
// server refuse the wrapper's own reads, which refuses the write; sql_select_limit and
// character_set_results, which change the rows those reads return, are read and
// refused with SessionError.Records, on the pool's first connection before it reads
// the records too (recordreads.go, red-team rt40b F3, F4)
// (TestProtectedSettingsCheckedBySession in fencedsql/internal/plan keeps the two
// lists in step).
//
// SessionQuery reads them in one round trip; the wrapper runs it before the first
// guarded write of each connection (after the DSN's parameters took effect) and again
// after any statement that may have changed them (see fencedsql's mayChangeSession:
// SET in any form, PREPARE/EXECUTE, CALL, DO, multi-statement strings, executable
// comments…, the execution of a prepared statement that is one of those, and the use
// of the driver's connection through Raw). With the schema check off
// (fenced_schema_check=false, WithSchemaCheck(false)) it runs all the same, when it
// would run with the check on and before a statement the lexer may read otherwise, and
// only the settings that change how the server reads text are enforced (the
// SessionError's Reading: unsafeModes, character_set_client), as PostgreSQL's are
// whatever the option (red-team rt34d F4: with ANSI_QUOTES, UPDATE "accounts" went out
// as a write to a string, unfenced). A stored function, procedure or trigger runs with
// its own sql_mode and character set and the server restores the caller's afterwards.

// SessionQuery reads, separated by single spaces:
//
//	<sql_mode> <character_set_client> <sql_log_bin> <autocommit> <completion_type>
//	<@@SESSION.timestamp> <NOW(6) to SYSDATE(6) in microseconds>
//
// and on MariaDB six more:
//
//	<skip_replication> <@@SESSION.server_id> <@@GLOBAL.server_id>
//	<@@SESSION.gtid_domain_id> <@@GLOBAL.gtid_domain_id> <gtid_seq_no>
//
// and from MariaDB 10.3.4 three more:
//
//	<system_versioning_asof, blanks as _> <@@SESSION.wsrep_on> <@@GLOBAL.wsrep_on>
//
// and last, on every server:
//
//	<sql_select_limit> <character_set_results, NULL as the text NULL> <writable primary: 1 or 0>
//
// The query ends in LIMIT 1, which overrides sql_select_limit (0 made it read no row),
// and runs with no statement time limit (noTimeLimit: an interrupted read of
// GLOBAL_STATUS returns no row rather than an error).
// sql_mode is the only value that may be empty, and none has a space. The query is
// ASCII without backslashes: every session reads it the same way. Its result is ASCII
// sent as binary, which the server does not convert to character_set_results (under
// utf16 the check read a garbled character_set_client and named it in its refusal).
// Under a mock driver (go-sqlmock), expect exactly Dialect.SessionQuery() (with
// regexp.QuoteMeta under the default regexp matcher) and answer SessionOK.
func (dialectImpl) SessionQuery() string {
	return sessionQuery
}

const sessionQuery = noTimeLimit + "SELECT " + noTimeLimitHint + "CAST(CONVERT(CONCAT_WS(' ', @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.sql_log_bin, " +
	"@@SESSION.autocommit, @@SESSION.completion_type, @@SESSION.timestamp, TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6))" +
	" /*M!100002 , @@SESSION.skip_replication, @@SESSION.server_id, @@GLOBAL.server_id, @@SESSION.gtid_domain_id, @@GLOBAL.gtid_domain_id, @@SESSION.gtid_seq_no */" +
	" /*M!100304 , REPLACE(@@SESSION.system_versioning_asof, ' ', '_'), @@SESSION.wsrep_on, @@GLOBAL.wsrep_on */" +
	", @@SESSION.sql_select_limit, IFNULL(@@SESSION.character_set_results, 'NULL'), " + writablePrimary +
	") USING ascii) AS BINARY) LIMIT 1"

// SessionOK is a value of SessionQuery that CheckSession accepts (MariaDB's form, with
// an unset clock): the answer a go-sqlmock test gives the session check.
const SessionOK = "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION utf8mb4 1 1 NO_CHAIN 1700000000.000000 20 0 1 1 0 0 0 DEFAULT 0 0 18446744073709551615 utf8mb4 1"

// clockTolerance is how far NOW(6) may be from SYSDATE(6) in an unset session clock.
// Unset, they differ by the time between the start of the check query (it reads no
// table and waits for no lock) and the evaluation of SYSDATE(6): microseconds, a few
// milliseconds on a loaded server. A second leaves that three orders of magnitude,
// and is far below what a clock set by hand needs to matter (tombstone retention is
// hours or days; a second is within what NTP slews a server's own clock by).
const clockTolerance = 1_000_000 // microseconds

// The field counts of SessionQuery's value: MySQL's, MariaDB's before 10.3.4 (no
// system versioning), and MariaDB's.
const (
	sessionFields          = 10
	sessionFieldsMariaDB10 = 16
	sessionFieldsMariaDB   = 19
)

// tailFields is the number of fields at the end of SessionQuery's value, after the
// MariaDB ones: sql_select_limit, character_set_results (the record reads' settings)
// and the writable-primary test.
const tailFields = 3

// unsafeCharsets are the client character sets whose multibyte characters can have a
// second byte below 0x80 (0x5C, the backslash, among them).
var unsafeCharsets = map[string]bool{"big5": true, "cp932": true, "gbk": true, "gb18030": true, "sjis": true}

// safeCharsets are the client character sets in which every byte below 0x80 is the
// ASCII character of its own and no byte of 0x80 and above is whitespace to the
// server: UTF-8, ASCII, binary, the single-byte sets without a no-break space among
// their whitespace, and the EUC sets (their multibyte characters are made of bytes of
// 0x80 and above). TestCharsetsByteClasses checks the list against the server.
var safeCharsets = map[string]bool{
	"utf8mb4": true, "utf8mb3": true, "utf8": true, "ascii": true, "binary": true,
	"cp1251": true, "cp1256": true, "cp1257": true, "cp850": true, "hp8": true, "koi8r": true, "koi8u": true,
	"macce": true, "macroman": true, "tis620": true,
	"ujis": true, "eucjpms": true, "euckr": true, "gb2312": true,
}

// spaceCharsets are the single-byte client character sets whose no-break space (0xA0
// or 0xFF) the server reads as whitespace: "UPDATE\xa0accounts" is two words to it and
// one to fencedsql's lexer, which reads every byte of 0x80 and above as part of a word.
var spaceCharsets = map[string]bool{
	"latin1": true, "latin2": true, "latin5": true, "latin7": true, "cp1250": true, "cp852": true, "cp866": true,
	"dec8": true, "greek": true, "hebrew": true, "armscii8": true, "geostd8": true, "keybcs2": true,
}

// unsafeModes are sql_mode flags with which the server quotes differently from the
// lexer (ANSI_QUOTES, NO_BACKSLASH_ESCAPES) and the combination modes that imply
// ANSI_QUOTES.
var unsafeModes = []string{"ANSI_QUOTES", "NO_BACKSLASH_ESCAPES", "ANSI", "ORACLE", "MSSQL", "DB2", "POSTGRESQL", "MAXDB"}

const sessionFix = "SET SESSION sql_mode = CONCAT_WS(',', @@SESSION.sql_mode, 'STRICT_TRANS_TABLES') without ANSI_QUOTES and NO_BACKSLASH_ESCAPES, and SET NAMES utf8mb4 (or the DSN parameters sql_mode and charset; check the server's and init_connect's defaults)"

const logBinFix = "SET SESSION sql_log_bin = 1, and remove whatever turns it off (init_connect, the DSN's sql_log_bin parameter, a statement sent on Raw)"

// rawFix ends the fix of a setting the wrapper refuses to SET on a pool with guarded
// tables (any value): the connection must go.
const rawFix = "; the wrapper refuses to SET it on a pool with guarded tables, so close the connection (or reset it on sql.Conn.Raw's driver connection), and remove whatever sets it (init_connect, a DSN parameter of that name, a statement sent on Raw)"

// CheckSession validates SessionQuery's value, refusing sessions in which a fenced
// write would not fail, would be read differently from the lexer, would not be
// committed, would date its tombstones by a clock set by hand, or would not reach the
// replicas.
func (dialectImpl) CheckSession(value string) error {
	f := strings.Split(value, " ")
	if len(f) != sessionFields && len(f) != sessionFieldsMariaDB10 && len(f) != sessionFieldsMariaDB {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_mode, character_set_client, sql_log_bin, autocommit, completion_type, timestamp", Value: value,
			Problem: "the session check returned an unexpected value", Fix: sessionFix, Reading: true, Records: true}
	}
	limit, results, primary := f[len(f)-3], f[len(f)-2], f[len(f)-1]
	f = f[:len(f)-tailFields]
	mode, cs, logBin := f[0], strings.ToLower(f[1]), f[2]
	modes := map[string]bool{}
	for _, m := range strings.Split(strings.ToUpper(mode), ",") {
		modes[strings.TrimSpace(m)] = true
	}
	// How the server reads text first (SessionError.Reading): a statement passed through
	// must not be let through because the session is unfit for writes in another way.
	// A reading error also carries Records when the session changes the wrapper's own
	// reads too, so that neither hides the other (the pool's first connection is refused
	// on Records before it reads the records).
	recErr := checkRecordReads(limit, results, modes, mode)
	if re := readingError(modes, mode, cs); re != nil {
		re.Records = recErr != nil
		return re
	}
	if recErr != nil {
		return recErr
	}
	if primary != "1" {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "read_only, replication", Value: primary, NotPrimary: true,
			Problem: "the server is not a writable primary (a replica, or read_only): its floor and rows lag behind the primary's, a write there never reaches it, and a stale token's write would be acknowledged",
			Fix:     "connect to the primary (a connection is judged once, when it first writes: close the pool's connections to a server that became a replica)"}
	}
	if !modes["STRICT_TRANS_TABLES"] && !modes["STRICT_ALL_TABLES"] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_mode", Value: mode,
			Problem: "not strict: a fenced write would store 0 instead of failing", Fix: sessionFix}
	}
	if !on(logBin) {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_log_bin", Value: logBin,
			Problem: "the session's writes stay out of the binary log: replicas never get them, and a failover forgets them", Fix: logBinFix}
	}
	if !on(f[3]) {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "autocommit", Value: f[3],
			Problem: "the session is inside a transaction the wrapper does not know of: an acknowledged write outside BeginTx is never committed",
			Fix:     "use BeginTx for transactions; autocommit must be 1" + rawFix}
	}
	if ct := strings.ToUpper(f[4]); ct != "NO_CHAIN" && ct != "0" {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "completion_type", Value: f[4],
			Problem: "CHAIN opens a transaction after every COMMIT the wrapper sends (a later write is then never committed), RELEASE closes the connection after it",
			Fix:     "SET SESSION completion_type = NO_CHAIN, and remove whatever sets it (init_connect, the DSN's completion_type parameter, a statement sent on Raw)"}
	}
	if d, err := strconv.ParseInt(f[6], 10, 64); err != nil || d > clockTolerance || d < -clockTolerance {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "timestamp", Value: f[5],
			Problem: "the session's clock is set by hand (" + clockSkew(f[6]) + "): it dates the tombstones of its deletes (a purge removes them early, and a deleted row can come back under an older token) and the one-statement DELETE's mark",
			Fix:     "the session clock must follow the server's (SET timestamp = DEFAULT)" + rawFix}
	}
	if len(f) == sessionFields-tailFields {
		return nil // MySQL
	}
	if on(f[7]) || !off(f[7]) {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "skip_replication", Value: f[7],
			Problem: "replicas may filter the session's writes out: a failover forgets them",
			Fix:     "SET SESSION skip_replication = 0, and remove whatever sets it (init_connect, the DSN's skip_replication parameter, a statement sent on Raw)"}
	}
	if f[8] != f[9] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "server_id", Value: f[8],
			Problem: "not the server's own (" + f[9] + "): a replica ignores the events of its own server id, and a failover forgets the session's writes",
			Fix:     "the session must keep the server's server_id" + rawFix}
	}
	if f[10] != f[11] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "gtid_domain_id", Value: f[10],
			Problem: "not the server's own (" + f[11] + "): replicas may filter the session's replication domain out, and a failover forgets its writes",
			Fix:     "the session must keep the server's gtid_domain_id" + rawFix}
	}
	if f[12] != "0" {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "gtid_seq_no", Value: f[12],
			Problem: "a sequence number set by hand, if already used, makes replicas skip the session's next transaction",
			Fix:     "gtid_seq_no must be 0" + rawFix}
	}
	if len(f) == sessionFieldsMariaDB10-tailFields {
		return nil
	}
	if !asofDefault(f[13]) {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "system_versioning_asof", Value: strings.ReplaceAll(f[13], "_", " "),
			Problem: "every SELECT of a system-versioned table reads it as of that time, a claim's locking read included, while its UPDATE stamps the current rows: the claim returns old values",
			Fix:     "SET SESSION system_versioning_asof = DEFAULT" + rawFix}
	}
	if f[14] != f[15] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "wsrep_on", Value: f[14],
			Problem: "not the server's own (" + f[15] + "): on a Galera node the session's writes stay local, and a failover forgets them",
			Fix:     "the session must keep the server's wsrep_on" + rawFix}
	}
	return nil
}

// asofDefault reports whether v, a session's system_versioning_asof as read, is
// DEFAULT: every SELECT then reads the current rows. The session check and
// schema.MaxToken's (PastRead) share it.
func asofDefault(v string) bool { return strings.EqualFold(v, "DEFAULT") }

// readingError refuses a session whose sql_mode (modes, as read: mode) or client
// character set cs makes the server read statement text differently from the lexer.
func readingError(modes map[string]bool, mode, cs string) *fencedsql.SessionError {
	for _, m := range unsafeModes {
		if modes[m] {
			return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_mode", Value: mode,
				Problem: "has " + m + ": the server would quote statements differently from fencedsql's lexer", Fix: sessionFix, Reading: true}
		}
	}
	switch {
	case unsafeCharsets[cs]:
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "character_set_client", Value: cs,
			Problem: "a multibyte character of this character set can end in a byte that fencedsql's lexer reads as a backslash", Fix: sessionFix, Reading: true}
	case spaceCharsets[cs]:
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "character_set_client", Value: cs,
			Problem: "the server reads a byte of 0x80 and above (no-break space) as whitespace where fencedsql's lexer reads part of a word", Fix: sessionFix, Reading: true}
	case !safeCharsets[cs]:
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "character_set_client", Value: cs,
			Problem: "a character set fencedsql does not know to be safe for its lexer", Fix: sessionFix, Reading: true}
	}
	return nil
}

// off reports whether v is a boolean variable's false.
func off(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "OFF", "0", "FALSE", "NO":
		return true
	}
	return false
}

// clockSkew describes the difference, in microseconds, between the session's clock
// and the server's.
func clockSkew(us string) string {
	d, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return "its difference from the server's clock reads " + strconv.Quote(us)
	}
	dir := "behind"
	if d < 0 {
		dir, d = "ahead of", -d
	}
	return strconv.FormatInt(d/1_000_000, 10) + " s " + dir + " the server's clock"
}
