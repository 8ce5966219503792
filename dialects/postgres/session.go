package postgres

import (
	"database/sql/driver"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// The session check (docs/design.md G11). The rewriter lexes PostgreSQL statements as
// the server reads them with standard_conforming_strings on (a backslash is an
// ordinary character in '…', an escape only in E'…') and with a client encoding in
// which every byte below 0x80 is the ASCII character it looks like. Two settings
// break that:
//
//   - standard_conforming_strings = off: backslashes escape in '…' too, so a quote the
//     lexer takes for the end of a string is, to the server, inside it (or the
//     reverse) and the rest of the statement is read differently;
//   - a client_encoding whose multibyte characters can have a second byte below 0x80
//     (SJIS, SHIFT_JIS_2004, BIG5, GBK, GB18030, UHC, JOHAB: PostgreSQL's client-only
//     encodings): a byte the lexer reads as a backslash or quote is, to the server,
//     the end of a character.
//
// Both are refused (*fencedsql.SessionError, errors.Is fencedsql.ErrSchema) before a
// guarded write is sent. backslash_quote is not checked: it only decides whether the
// server refuses \' in a string (an error), never how it reads one.
//
// Both settings are GUC_REPORT parameters: the server tells the client their new value
// (a ParameterStatus message) whenever they change, by SET, SET LOCAL and its revert at
// COMMIT/ROLLBACK, set_config() in any query, function or DO block, RESET, a DSN or
// startup parameter, and pgx keeps them (PgConn.ParameterStatus). The dialect reads
// them from there before every guarded write (TrackedSession), so the check costs no
// round trip and does not depend on the wrapper having seen the statement that
// changed them. Under a driver that does not keep them (lib/pq, a mock), SessionQuery
// runs before every guarded write.

// SessionQuery reads standard_conforming_strings and client_encoding as one value,
// "<standard_conforming_strings> <client_encoding>".
func (dialect) SessionQuery() string {
	return "SELECT current_setting('standard_conforming_strings') || ' ' || current_setting('client_encoding')"
}

// TrackedSession implements fencedsql.SessionTracker: the value SessionQuery would
// return, from the parameters pgx keeps, when raw is (or wraps) a pgx connection that
// has received both.
func (dialect) TrackedSession(raw driver.Conn) (string, bool) {
	var c any = raw
	for range 16 { // peel wrappers that expose their connection (otelsql, …)
		if pc, ok := c.(interface{ Conn() *pgx.Conn }); ok {
			p := pc.Conn()
			if p == nil || p.PgConn() == nil {
				return "", false
			}
			scs := p.PgConn().ParameterStatus("standard_conforming_strings")
			enc := p.PgConn().ParameterStatus("client_encoding")
			if scs == "" || enc == "" {
				return "", false
			}
			return scs + " " + enc, true
		}
		r, ok := c.(interface{ Raw() driver.Conn })
		if !ok {
			return "", false
		}
		next := r.Raw()
		if next == nil {
			return "", false
		}
		c = next
	}
	return "", false
}

// clientOnlyEncodings are the encodings whose multibyte characters can have a second
// byte below 0x80.
var clientOnlyEncodings = map[string]bool{
	"SJIS": true, "SHIFT_JIS_2004": true, "BIG5": true, "GBK": true, "GB18030": true, "UHC": true, "JOHAB": true,
}

// safeEncodings are the encodings in which every byte below 0x80 is an ASCII character
// of its own: single-byte encodings, UTF8, and the EUC and MULE encodings (their
// multibyte characters are made of bytes of 0x80 and above).
var safeEncodings = map[string]bool{
	"UTF8": true, "SQL_ASCII": true, "MULE_INTERNAL": true,
	"EUC_CN": true, "EUC_JP": true, "EUC_JIS_2004": true, "EUC_KR": true, "EUC_TW": true,
	"LATIN1": true, "LATIN2": true, "LATIN3": true, "LATIN4": true, "LATIN5": true,
	"LATIN6": true, "LATIN7": true, "LATIN8": true, "LATIN9": true, "LATIN10": true,
	"ISO_8859_5": true, "ISO_8859_6": true, "ISO_8859_7": true, "ISO_8859_8": true,
	"KOI8R": true, "KOI8U": true, "WIN866": true, "WIN874": true,
	"WIN1250": true, "WIN1251": true, "WIN1252": true, "WIN1253": true, "WIN1254": true,
	"WIN1255": true, "WIN1256": true, "WIN1257": true, "WIN1258": true,
}

const sessionFix = "SET standard_conforming_strings = on; SET client_encoding = 'UTF8' (and remove the setting from the DSN, the role's or database's defaults, or whatever sets it)"

// CheckSession validates "<standard_conforming_strings> <client_encoding>".
func (dialect) CheckSession(value string) error {
	scs, enc, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		return &fencedsql.SessionError{Dialect: "postgres", Setting: "standard_conforming_strings, client_encoding", Value: value,
			Problem: "the session check returned an unexpected value", Fix: sessionFix}
	}
	if !strings.EqualFold(scs, "on") {
		return &fencedsql.SessionError{Dialect: "postgres", Setting: "standard_conforming_strings", Value: scs,
			Problem: "with it off, backslashes escape in '…' strings, so the server would read statements differently from fencedsql's lexer", Fix: sessionFix}
	}
	e := strings.ToUpper(strings.TrimSpace(enc))
	switch {
	case clientOnlyEncodings[e]:
		return &fencedsql.SessionError{Dialect: "postgres", Setting: "client_encoding", Value: enc,
			Problem: "a multibyte character of this encoding can end in a byte that fencedsql's lexer reads as a backslash or quote", Fix: sessionFix}
	case !safeEncodings[e]:
		return &fencedsql.SessionError{Dialect: "postgres", Setting: "client_encoding", Value: enc,
			Problem: "an encoding fencedsql does not know to be safe for its lexer", Fix: sessionFix}
	}
	return nil
}

var _ fencedsql.SessionTracker = dialect{}
