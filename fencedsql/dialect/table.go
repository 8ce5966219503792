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
//
// A part is either as the application wrote it — a plain identifier (letters, digits,
// _ and $, not quoted: see ParseTableName), which the dialect folds by its rules
// (PostgreSQL: ASCII lower case, cut to 63 bytes) — or, marked by ExactSchema or
// ExactName, exact: spelled as the catalog keeps it (read from the catalog, such as
// the schema an unqualified name resolved to, or already folded by the dialect). An
// exact part may hold any character (a space, a dot, a quote, upper case); it is never
// folded, is quoted as it is wherever a statement or a regclass text names it (Text),
// and is compared byte for byte (red-team rt56d F4: a search_path schema "odd sch" or
// "Mixed" resolved from the catalog was handed to to_regclass unquoted, or folded to
// "mixed"). CatalogName and InCatalogSchema make exact names.
type TableName struct {
	Schema, Name string
	// ExactSchema and ExactName mark the part as the catalog spells it.
	ExactSchema, ExactName bool
}

// CatalogName is the table schema.name as the catalog spells both parts (exact).
func CatalogName(schema, name string) TableName {
	return TableName{Schema: schema, Name: name, ExactSchema: true, ExactName: true}
}

// InCatalogSchema returns t in the schema as the catalog spells it (exact): where an
// unqualified name resolved to.
func (t TableName) InCatalogSchema(schema string) TableName {
	t.Schema, t.ExactSchema = schema, true
	return t
}

// Folded returns t with each part that is not exact folded by fold (a dialect's rule
// for the names the application writes unquoted) and both parts marked exact: the
// name as the server keeps it. An exact part is kept as it is.
func (t TableName) Folded(fold func(string) string) TableName {
	if !t.ExactSchema && t.Schema != "" {
		t.Schema = fold(t.Schema)
	}
	if !t.ExactName {
		t.Name = fold(t.Name)
	}
	t.ExactSchema, t.ExactName = true, true
	return t
}

// Text returns the name as a statement or a PostgreSQL regclass text (to_regclass)
// reads it: each exact part quoted by quote (a Dialect's QuoteIdent), each other part
// as written (the server folds it), "schema.name" or "name".
func (t TableName) Text(quote func(string) string) string {
	part := func(s string, exact bool) string {
		if exact {
			return quote(s)
		}
		return s
	}
	if t.Schema == "" {
		return part(t.Name, t.ExactName)
	}
	return part(t.Schema, t.ExactSchema) + "." + part(t.Name, t.ExactName)
}

// SameName reports whether t and u name the same table as written: the same parts,
// whatever their exactness marks.
func (t TableName) SameName(u TableName) bool { return t.Schema == u.Schema && t.Name == u.Name }

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

// String returns "schema.name", or "name" when Schema is empty, unquoted: for
// messages and keys. A statement or a regclass text names the table by Text.
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
