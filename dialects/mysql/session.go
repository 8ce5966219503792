package mysql

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The session check (docs/design.md G11). A fenced write fails through the NOT NULL
// violation of the fencing NULL, and the rewriter lexes statements with MySQL's
// default quoting, so three session settings must be right before a guarded write:
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
//     is then accepted). The wrapper refuses SET sql_log_bin = 0 on pools with guarded
//     tables; this check catches what it cannot see (init_connect, a DSN parameter, a
//     statement sent on Raw). It is checked on every server, with or without a binary
//     log: sql_log_bin is 1 by default everywhere, and a server without one today may
//     get replicas tomorrow.
//
// SessionQuery reads them in one round trip; the wrapper runs it before the first
// guarded write of each connection (after the DSN's charset= and sql_mode= took
// effect) and again after any statement that may have changed them (see
// fencedsql's mayChangeSession: SET in any form, PREPARE/EXECUTE, CALL, DO,
// multi-statement strings, executable comments…, and the execution of a prepared
// statement that is one of those). A stored function, procedure or trigger runs with
// its own sql_mode and character set and the server restores the caller's afterwards.

// SessionQuery reads "<sql_mode> <character_set_client> <sql_log_bin>" (sql_mode has
// no spaces, and may be empty; sql_log_bin is 1 or 0): the one round trip of the
// check, extended with sql_log_bin at no extra cost. The query is ASCII without
// backslashes: every session reads it the same way. Its result is ASCII sent as
// binary, which the server does not convert to character_set_results (under utf16 the
// check read a garbled character_set_client and named it in its refusal).
func (dialectImpl) SessionQuery() string {
	return "SELECT CAST(CONVERT(CONCAT_WS(' ', @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.sql_log_bin) USING ascii) AS BINARY)"
}

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

// CheckSession validates "<sql_mode> <character_set_client> <sql_log_bin>", refusing
// sessions in which a fenced write would not fail, would be read differently from the
// lexer, or would not reach the replicas.
func (dialectImpl) CheckSession(value string) error {
	j := strings.LastIndexByte(value, ' ')
	i := -1
	if j > 0 {
		i = strings.LastIndexByte(value[:j], ' ')
	}
	if i < 0 {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_mode, character_set_client, sql_log_bin", Value: value,
			Problem: "the session check returned an unexpected value", Fix: sessionFix, Reading: true}
	}
	mode, cs, logBin := value[:i], strings.ToLower(strings.TrimSpace(value[i+1:j])), strings.TrimSpace(value[j+1:])
	modes := map[string]bool{}
	for _, m := range strings.Split(strings.ToUpper(mode), ",") {
		modes[strings.TrimSpace(m)] = true
	}
	// How the server reads text first (SessionError.Reading): a statement passed through
	// must not be let through because the session is unfit for writes in another way.
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
	if !modes["STRICT_TRANS_TABLES"] && !modes["STRICT_ALL_TABLES"] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_mode", Value: mode,
			Problem: "not strict: a fenced write would store 0 instead of failing", Fix: sessionFix}
	}
	if !on(logBin) {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_log_bin", Value: logBin,
			Problem: "the session's writes stay out of the binary log: replicas never get them, and a failover forgets them", Fix: logBinFix}
	}
	return nil
}
