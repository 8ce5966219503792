package dialect

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// TableName names one table. Schema is "" for an unqualified name, which the database
// resolves as it resolves the statements' own names (PostgreSQL: the search_path;
// MySQL: the connection's database; SQLite: the main database, then attached ones).
// Both parts are plain identifiers (letters, digits, _ and $, not quoted): see
// ParseTableName.
type TableName struct{ Schema, Name string }

// ParseTableName splits "table" or "schema.table" and validates both parts as plain
// identifiers (letters, digits, _ and $ not first, non-ASCII letters; at most 128
// bytes). A bad name is a *NameError.
func ParseTableName(s string) (TableName, error) {
	t, problem := parseTableName(s)
	if problem != "" {
		return TableName{}, &NameError{Name: s, Problem: problem}
	}
	return t, nil
}

// NameError is a table name ParseTableName refuses: Problem says why, in words.
type NameError struct{ Name, Problem string }

func (e *NameError) Error() string { return fmt.Sprintf("table %q: %s", e.Name, e.Problem) }

// parseTableName splits "table" or "schema.table" and validates both parts; the
// problem in words when it is not a plain, possibly qualified, table name.
func parseTableName(s string) (TableName, string) {
	schema, name, qualified := strings.Cut(s, ".")
	if !qualified {
		schema, name = "", s
	}
	if qualified && schema == "" {
		return TableName{}, "empty schema name"
	}
	for _, id := range []string{schema, name} {
		if !PlainIdent(id) {
			return TableName{}, fmt.Sprintf("%q is not a valid identifier", id)
		}
	}
	if name == "" {
		return TableName{}, "empty table name"
	}
	return TableName{Schema: schema, Name: name}, ""
}

// PlainIdent reports whether s is an identifier a guard may name: letters, digits, _
// and $ (not first), and non-ASCII letters, at most 128 bytes. Anything else (quotes, spaces,
// dots) is refused so that names never need escaping. "" passes: the callers check
// emptiness where it matters. A name that is not valid UTF-8 (and U+FFFD, what
// invalid bytes decode to) is refused: statements are UTF-8, so such a guard matches
// no statement's name — a registered name read back in latin1 (red-team rt40b F4)
// left its table unguarded.
func PlainIdent(s string) bool {
	if s == "" {
		return true
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			return false
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= 0x80:
		case i > 0 && (r >= '0' && r <= '9' || r == '$'):
		default:
			return false
		}
	}
	return len(s) <= 128
}

// String returns "schema.name", or "name" when Schema is empty, unquoted.
func (t TableName) String() string {
	if t.Schema == "" {
		return t.Name
	}
	return t.Schema + "." + t.Name
}

// Quote returns the name with each part quoted by quote (a Dialect's QuoteIdent).
func (t TableName) Quote(quote func(string) string) string {
	if t.Schema == "" {
		return quote(t.Name)
	}
	return quote(t.Schema) + "." + quote(t.Name)
}

// EqualFoldASCII reports whether a and b are equal with ASCII letters compared without
// case, as SQLite compares identifiers and SQL keywords compare: unlike
// strings.EqualFold, no other character folds (U+017F ſ is not s, U+212A K is not k),
// so a name spelled with such a character is another name. (MySQL/MariaDB column names
// fold further: SameColumnName.)
func EqualFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// LowerASCII returns s with its ASCII letters in lower case and every other byte as it
// is (byte offsets unchanged): how SQLite, MySQL/MariaDB and PostgreSQL's unquoted
// identifiers fold names.
func LowerASCII(s string) string { return sqllex.LowerASCII(s) }
