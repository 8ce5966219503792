package secret

import "strings"

// KeyValue is one setting of a keyword/value connection string (PostgreSQL's
// "host=h password=p" form).
type KeyValue struct {
	Key   string // the keyword, blanks around it trimmed
	Value string // the value, unquoted and unescaped
	// Start and End are the setting's bytes in the string: from the first byte of its
	// keyword to the end of its value (closing quote included).
	Start, End int
}

// KeyValues reads a keyword/value connection string as pgx does
// (parseKeywordValueSettings), the one reading of that form in this module (the
// wrapper's DSN parameters, fencedsql/dsn.go, and the password masking, Password): a
// keyword is the text before the next '=' with the blanks around it trimmed
// ("password = p" is allowed, as libpq allows it), blanks after the '=' are skipped,
// and a value runs to the next blank, or is single-quoted; in either, a backslash
// escapes the byte after it (\\ and \' unescaped, as pgx unescapes them). Text after
// the last '=' with no '=' of its own is a keyword without a value.
func KeyValues(s string) []KeyValue {
	var out []KeyValue
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			break
		}
		kv := KeyValue{Start: i}
		eq := strings.IndexByte(s[i:], '=')
		if eq < 0 {
			kv.Key, kv.End = strings.TrimRight(s[i:], blanks), len(s)
			out = append(out, kv)
			break
		}
		kv.Key, i = strings.TrimRight(s[i:i+eq], blanks), i+eq+1
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
		}
		var val strings.Builder
		for i < len(s) && (quoted && s[i] != '\'' || !quoted && !isSpace(s[i])) {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if c := s[i]; c != '\\' && c != '\'' {
					val.WriteByte('\\') // pgx unescapes \\ and \' only
				}
			}
			val.WriteByte(s[i])
			i++
		}
		if quoted && i < len(s) {
			i++ // closing quote
		}
		kv.Value, kv.End = val.String(), i
		out = append(out, kv)
	}
	return out
}

// IsKeyValue reports PostgreSQL's keyword/value form ("host=h dbname=d"): the DSN does
// not start with a URL scheme ("postgres://", "file:///…"; a "://" in a value, as in
// application_name=http://x, does not make it a URL: red-team rt43e F1), and its
// first '=' comes before any '?'.
func IsKeyValue(dsn string) bool {
	if startsWithScheme(dsn) {
		return false
	}
	eq := strings.IndexByte(dsn, '=')
	q := strings.IndexByte(dsn, '?')
	return eq >= 0 && (q < 0 || eq < q)
}

// startsWithScheme reports a DSN that starts with a URL scheme and "://" (RFC 3986: a
// letter, then letters, digits, '+', '-' or '.').
func startsWithScheme(dsn string) bool {
	i := strings.Index(dsn, "://")
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := dsn[j]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (j == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// blanks are the bytes isSpace reports.
const blanks = " \t\n\r\f\v"

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
